#include "core/process_stats.h"

#include <sys/resource.h>
#include <unistd.h>

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

}  // namespace strata
