// Reads a checkpoint's pages into memory ahead of the first forward pass, with a progress bar:
// the weights are mmap'd, so without this the first tokens pay for every page fault.
#pragma once
#include <string>

namespace strata::cli {

// Touches every page of every shard of the checkpoint in DIR (MADV_WILLNEED, then one read per
// page), showing progress on stderr when the checkpoint is larger than `min_bytes`.
void preload_checkpoint(const std::string& dir, double min_bytes = 1e9);

}  // namespace strata::cli
