// The processes one model runs over. Under `mpirun -np N` these are MPI_COMM_WORLD's N ranks,
// which replicate everything but the routed experts (src/models/expert_exchange.h); otherwise a
// world of one, and every call here is a no-op that needs no MPI at all. The collectives are
// called from one thread at a time (MPI_THREAD_SERIALIZED), always in the same order on every
// rank: each rank runs the same deterministic program on the same inputs.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace strata::dist {

// MPI_Init when this process was started by an MPI launcher (Error when this build has no
// MPI and the launcher asks for more than one rank); nothing otherwise. Call once, first.
void init(int* argc, char*** argv);
// MPI_Finalize after init; safe to call when init did nothing.
void finalize();

// On ranks other than 0: standard output and error to /dev/null (rank 0 speaks for the job);
// abort_job still reaches the original standard error.
void quiet_other_ranks();

int rank();
int size();
// Whether this build links MPI.
bool built_with_mpi();

// Every collective below waits at most STRATA_MPI_TIMEOUT seconds (600 by default; 0: no
// limit), then ends the job with an error naming the collective.

// Ends every rank of the job at once (MPI_Abort): a rank that fails must not leave the
// others waiting in a collective. `message` goes to stderr first, prefixed by the rank.
[[noreturn]] void abort_job(const std::string& message, int code = 1);

// Each rank's bytes, concatenated in rank order on every rank; sizes (optional) gets each
// rank's count.
std::vector<uint8_t> allgatherv(const void* data, int64_t bytes, std::vector<int64_t>* sizes = nullptr);
// Every rank's string, in rank order.
std::vector<std::string> allgather_string(const std::string& s);
// Time spent in allgatherv since start (the exchange itself and the wait for slower ranks),
// and the bytes it moved into this rank.
struct ExchangeStats {
  int64_t calls = 0;
  double seconds = 0;
  uint64_t bytes_received = 0;
};
ExchangeStats exchange_stats();

// Rank 0's value on every rank.
uint64_t broadcast_u64(uint64_t v);
std::string broadcast_string(const std::string& s);

// Throws Error on every rank, naming the first rank whose `value` differs from rank 0's,
// when the ranks disagree on `what` (a checkpoint, a version, an option).
void check_same_on_all_ranks(const std::string& what, const std::string& value);

}  // namespace strata::dist
