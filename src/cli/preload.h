// Reads a checkpoint's pages into memory ahead of the first forward pass, with a progress bar:
// the weights are mmap'd, so without this the first tokens pay for every page fault.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "io/safetensors.h"

namespace strata::cli {

struct PreloadResult {
  bool read_in = false;        // false: skipped, the checkpoint is too large for memory
  uint64_t bytes = 0;          // checkpoint bytes
  uint64_t huge_bytes = 0;     // of them, mapped in 2 MB pages after the preload
  uint64_t huge_mappable = 0;  // bytes that 2 MB pages could map (whole 2 MB pages of each shard)
  uint64_t recached_bytes = 0; // shards read again to be cached in 2 MB folios
};

// Reads every page of every shard in through the checkpoint's own mappings, so the model that
// holds `ckpt` takes no fault later; progress on stderr when the checkpoint is larger than
// `min_bytes`. Then, for each shard that the page cache held in small folios (mapped in 4 KB
// pages: a page walk per 4 KB of weights, 3.7x slower FP4 expert products on flash-2l), drops
// the shard's cached pages and reads it again through the huge-page mapping, once: the kernel
// then caches it in 2 MB folios, for this process and every later one. Skipped (read_in false)
// when the checkpoint is larger than 3/4 of physical memory, unless `force`: reading it all
// would evict itself.
// `holds`: the tensors this process reads (Model::holds_tensor); under expert parallelism the
// other ranks' experts are left unread, and the result counts only what was read.
using TensorFilter = std::function<bool(const std::string& tensor)>;
PreloadResult preload_checkpoint(const SafetensorsCheckpoint& ckpt, const std::string& label, double min_bytes = 1e9,
                                 bool force = false, const TensorFilter& holds = {});

// Reads every 64-byte line of every shard once, on the worker threads, and returns the seconds it
// took. A benchmark's warm-up: on a virtual machine the host may hold a guest page that nothing
// touched lately somewhere slower, with no fault the guest can see (flash-2l decoded 8-17 tokens/s
// in a process's first pass after another engine ran, 21-25 in its second, with no page fault
// in either), so the measured passes must not be the first to read the weights.
double read_through_checkpoint(const SafetensorsCheckpoint& ckpt, const TensorFilter& holds = {});

// mlock every shard (MappedFile::lock); throws Error when the kernel refuses.
void lock_checkpoint(const SafetensorsCheckpoint& ckpt);

}  // namespace strata::cli
