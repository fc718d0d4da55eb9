// Reads a checkpoint's pages into memory ahead of the first forward pass, with a progress bar:
// the weights are mmap'd, so without this the first tokens pay for every page fault.
#pragma once
#include <string>

#include "io/safetensors.h"

namespace strata::cli {

// Touches every page of every shard through the checkpoint's own mappings (MADV_WILLNEED, then
// one read per page), so the model that holds `ckpt` takes no fault later; progress on stderr
// when the checkpoint is larger than `min_bytes`. Skipped (returns false) when the checkpoint
// is larger than 3/4 of physical memory, unless `force`: reading it all would evict itself.
bool preload_checkpoint(const SafetensorsCheckpoint& ckpt, const std::string& label, double min_bytes = 1e9,
                        bool force = false);

// mlock every shard (MappedFile::lock); throws Error when the kernel refuses.
void lock_checkpoint(const SafetensorsCheckpoint& ckpt);

}  // namespace strata::cli
