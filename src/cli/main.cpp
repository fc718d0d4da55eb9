#include <malloc.h>

#include <cstdio>
#include <exception>

#include "cli/app.h"
#include "core/huge_buffer.h"
#include "dist/world.h"

int main(int argc, char** argv) {
  // The forward pass allocates its activation buffers per call (a 128-token chunk: several of
  // 2 MB per layer). glibc serves such sizes with fresh mmaps, each page faulted in and zeroed
  // again on every call, and returns freed heap tops to the system: on this VM, page faults
  // were ~7% of a prefill. Buffers up to 32 MB (glibc's largest mmap threshold) now come
  // from the heap and freed memory stays there for the next call (larger ones: CallBuffer).
  mallopt(M_MMAP_THRESHOLD, int(strata::kHeapKeptBelow));
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  try {
    // Under mpirun every rank runs the same command; rank 0 speaks for the job.
    strata::dist::init(&argc, &argv);
    strata::dist::quiet_other_ranks();
    const int rc = strata::cli::run(argc, argv);
    strata::dist::finalize();
    return rc;
  } catch (const std::exception& e) {
    // A failing rank ends the whole job, so no other rank waits for it in a collective.
    if (strata::dist::size() > 1) strata::dist::abort_job(std::string("error: ") + e.what());
    std::fprintf(stderr, "strata: error: %s\n", e.what());
    return 1;
  }
}
