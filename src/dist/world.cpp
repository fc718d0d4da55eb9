#include "dist/world.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/error.h"

#ifdef STRATA_HAVE_MPI
#include <mpi.h>
#endif

namespace strata::dist {
namespace {

int g_rank = 0, g_size = 1;
int g_error_fd = 2;
ExchangeStats g_stats;
bool g_initialized = false;

// The world size an MPI launcher announces in the environment (OpenMPI, then PMI/PMIx), 0 when
// no launcher started this process.
int launcher_size() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"}) {
    if (const char* v = std::getenv(var)) return std::atoi(v);
  }
  return 0;
}

#ifdef STRATA_HAVE_MPI
void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw Error(std::string("MPI ") + what + " failed on rank " + std::to_string(g_rank) + ": " + std::string(text, size_t(len)));
}
// Seconds a collective may take before the job ends: STRATA_MPI_TIMEOUT, 600 by default (a
// rank loading a large shard keeps the others waiting in the first collective), 0 for none.
double collective_timeout() {
  static const double t = [] {
    const char* v = std::getenv("STRATA_MPI_TIMEOUT");
    if (!v || !*v) return 600.0;
    char* end = nullptr;
    const double x = std::strtod(v, &end);
    if (end == v || *end || x < 0)
      throw Error(std::string("STRATA_MPI_TIMEOUT: '") + v + "' is not a number of seconds (0: no timeout)");
    return x;
  }();
  return t;
}

// Completes a nonblocking collective, or ends the job when it has not completed in time: MPI
// has no timeout of its own, and a rank that hangs (rather than dies) would hold every other
// rank in the collective forever.
void wait_for(MPI_Request& req, const char* what) {
  const double limit = collective_timeout();
  if (limit <= 0) {
    check(MPI_Wait(&req, MPI_STATUS_IGNORE), what);
    return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t spins = 0;; ++spins) {
    int done = 0;
    check(MPI_Test(&req, &done, MPI_STATUS_IGNORE), what);
    if (done) return;
    // the clock is read every few hundred tests: the common wait is microseconds
    if (spins % 256 == 255) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (s > limit) {
        char secs[32];
        std::snprintf(secs, sizeof secs, "%.0f", limit);
        abort_job(std::string("error: the other ranks did not complete the ") + what + " within " + secs +
                  " s (STRATA_MPI_TIMEOUT): a rank is stuck, or died where MPI could not see it");
      }
      if (s > 1e-3) sched_yield();  // a long wait: leave the core to others now and then
    }
  }
}
#endif

}  // namespace

bool built_with_mpi() {
#ifdef STRATA_HAVE_MPI
  return true;
#else
  return false;
#endif
}

void init(int* argc, char*** argv) {
  const int announced = launcher_size();
  if (announced == 0 || g_initialized) return;
#ifdef STRATA_HAVE_MPI
  int provided = 0;
  MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
  g_initialized = true;
  // Errors come back as codes, so a failed collective becomes an Error naming the rank (then
  // abort_job) rather than MPI's own abort without the cause.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  if (provided < MPI_THREAD_SERIALIZED)
    abort_job("this MPI library offers thread level " + std::to_string(provided) + ", strata needs MPI_THREAD_SERIALIZED");
#else
  if (announced > 1)
    throw Error("started by an MPI launcher with " + std::to_string(announced) +
                " ranks, but this build of strata has no MPI (install libopenmpi-dev and rebuild)");
#endif
}

void finalize() {
#ifdef STRATA_HAVE_MPI
  if (g_initialized) {
    MPI_Finalize();
    g_initialized = false;
  }
#endif
}

void quiet_other_ranks() {
  if (g_rank == 0) return;
  std::fflush(stdout);
  std::fflush(stderr);
  const int devnull = ::open("/dev/null", O_WRONLY);
  if (devnull < 0) return;
  g_error_fd = ::dup(2);
  ::dup2(devnull, 1);
  ::dup2(devnull, 2);
  ::close(devnull);
}

ExchangeStats exchange_stats() { return g_stats; }

int rank() { return g_rank; }
int size() { return g_size; }

void abort_job(const std::string& message, int code) {
  const std::string line = "strata: rank " + std::to_string(g_rank) + " of " + std::to_string(g_size) + ": " + message + "\n";
  std::fflush(stderr);
  if (::write(g_error_fd, line.data(), line.size()) < 0) {
  }
#ifdef STRATA_HAVE_MPI
  if (g_initialized) MPI_Abort(MPI_COMM_WORLD, code);
#endif
  std::_Exit(code);
}

std::vector<uint8_t> allgatherv(const void* data, int64_t bytes, std::vector<int64_t>* sizes) {
  if (g_size == 1) {
    if (sizes) *sizes = {bytes};
    const auto* p = static_cast<const uint8_t*>(data);
    return std::vector<uint8_t>(p, p + bytes);
  }
#ifdef STRATA_HAVE_MPI
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<int64_t> n(static_cast<size_t>(g_size));
  MPI_Request req;
  check(MPI_Iallgather(&bytes, 1, MPI_INT64_T, n.data(), 1, MPI_INT64_T, MPI_COMM_WORLD, &req), "allgather of sizes");
  wait_for(req, "allgather of sizes");
  std::vector<int> counts(static_cast<size_t>(g_size)), displs(static_cast<size_t>(g_size));
  int64_t total = 0;
  for (int r = 0; r < g_size; ++r) {
    if (total + n[size_t(r)] > INT_MAX)
      throw Error("allgatherv: " + std::to_string(total + n[size_t(r)]) + " bytes exceed one MPI message (2 GiB)");
    counts[size_t(r)] = int(n[size_t(r)]);
    displs[size_t(r)] = int(total);
    total += n[size_t(r)];
  }
  std::vector<uint8_t> out(static_cast<size_t>(total));
  check(MPI_Iallgatherv(data, int(bytes), MPI_BYTE, out.data(), counts.data(), displs.data(), MPI_BYTE, MPI_COMM_WORLD,
                        &req),
        "allgatherv");
  wait_for(req, "allgatherv");
  ++g_stats.calls;
  g_stats.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  g_stats.bytes_received += uint64_t(total - bytes);
  if (sizes) *sizes = std::move(n);
  return out;
#else
  throw Error("allgatherv over several ranks in a build without MPI");
#endif
}

std::vector<std::string> allgather_string(const std::string& s) {
  std::vector<int64_t> sizes;
  const std::vector<uint8_t> all = allgatherv(s.data(), int64_t(s.size()), &sizes);
  std::vector<std::string> out;
  size_t at = 0;
  for (int64_t n : sizes) {
    out.emplace_back(reinterpret_cast<const char*>(all.data()) + at, size_t(n));
    at += size_t(n);
  }
  return out;
}

uint64_t broadcast_u64(uint64_t v) {
  if (g_size == 1) return v;
#ifdef STRATA_HAVE_MPI
  MPI_Request req;
  check(MPI_Ibcast(&v, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD, &req), "broadcast");
  wait_for(req, "broadcast");
#endif
  return v;
}

std::string broadcast_string(const std::string& s) {
  if (g_size == 1) return s;
  std::string out = s;
  out.resize(size_t(broadcast_u64(s.size())));
#ifdef STRATA_HAVE_MPI
  if (!out.empty()) {
    if (out.size() > size_t(INT_MAX)) throw Error("broadcast: more than 2 GiB in one message");
    MPI_Request req;
    check(MPI_Ibcast(out.data(), int(out.size()), MPI_CHAR, 0, MPI_COMM_WORLD, &req), "broadcast");
    wait_for(req, "broadcast");
  }
#endif
  return out;
}

void check_same_on_all_ranks(const std::string& what, const std::string& value) {
  if (g_size == 1) return;
  const std::vector<std::string> all = allgather_string(value);
  for (int r = 1; r < g_size; ++r)
    if (all[size_t(r)] != all[0])
      throw Error("rank " + std::to_string(r) + "'s " + what + " differs from rank 0's (" + all[size_t(r)] + " against " +
                  all[0] + "): every rank must run the same strata on the same checkpoint");
}

}  // namespace strata::dist
