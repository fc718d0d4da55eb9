#include "core/process_stats.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>

namespace strata {

ProcessStats process_stats() {
  ProcessStats s;
  rusage u{};
  if (::getrusage(RUSAGE_SELF, &u) == 0) {
    s.minor_faults = u.ru_minflt;
    s.major_faults = u.ru_majflt;
  }
  // /proc/self/statm: total and resident pages
  if (std::FILE* f = std::fopen("/proc/self/statm", "r")) {
    long total = 0, resident = 0;
    if (std::fscanf(f, "%ld %ld", &total, &resident) == 2) s.resident_bytes = int64_t(resident) * ::sysconf(_SC_PAGESIZE);
    std::fclose(f);
  }
  return s;
}

int64_t mapping_pmd_bytes(const void* start) {
  std::FILE* f = std::fopen("/proc/self/smaps", "r");
  if (!f) return -1;
  const unsigned long want = static_cast<unsigned long>(reinterpret_cast<uintptr_t>(start));
  char line[512];
  bool in = false, found = false;
  int64_t kb = 0;
  while (std::fgets(line, sizeof line, f)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {
      if (in) break;  // past our mapping's fields
      in = lo == want;
      found = found || in;
      continue;
    }
    long v = 0;
    if (in && (std::sscanf(line, "FilePmdMapped: %ld kB", &v) == 1 || std::sscanf(line, "AnonHugePages: %ld kB", &v) == 1))
      kb += v;
  }
  std::fclose(f);
  return found ? kb * 1024 : -1;
}

}  // namespace strata
