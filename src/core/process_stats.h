// What the process has cost the machine so far: resident memory and page faults. Start-up and
// preload report these (a mapped checkpoint is paid for in page faults, not at open).
#pragma once
#include <cstdint>

namespace strata {

struct ProcessStats {
  int64_t resident_bytes = 0;
  int64_t minor_faults = 0, major_faults = 0;  // served from memory / needing I/O
};

ProcessStats process_stats();

// Bytes of the mapping that starts at `start` which the kernel maps with 2 MB (PMD) entries:
// the mapping's FilePmdMapped + AnonHugePages in /proc/self/smaps; -1 when it cannot be read.
int64_t mapping_pmd_bytes(const void* start);

}  // namespace strata
