#include "kernels/parallel.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <pthread.h>
#include <sched.h>

namespace strata::kernels {

namespace {
std::atomic<int> g_threads{0};
int default_threads() {
  if (const char* e = std::getenv("STRATA_THREADS")) {
    int v = std::atoi(e);
    if (v > 0) return v;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

int g_pin = -1;  // -1: not read from the environment yet
bool pin_wanted() {
  if (g_pin < 0) {
    const char* e = std::getenv("STRATA_PIN_THREADS");
    g_pin = e && std::atoi(e) > 0 ? 1 : 0;
  }
  return g_pin == 1;
}

void pin_to(pthread_t t, int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(t, sizeof(set), &set);  // best effort: a refused pin leaves it unpinned
}

bool g_caller_pinned = false;  // a pool pinned its creator; an unpinned rebuild lets it go
std::vector<int> all_cpus();
void unpin(pthread_t t) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : all_cpus()) CPU_SET(c, &set);
  pthread_setaffinity_np(t, sizeof(set), &set);
}

inline void cpu_relax() {
#if defined(__x86_64__)
  _mm_pause();
#endif
}

// A spin that gives its CPU away now and then. When there are more runnable threads than CPUs
// (two test processes, a server beside other work, a host that steals a vCPU), a pure spin
// holds a CPU for a whole time slice while the thread it waits for cannot run: two 2-thread
// processes on 2 CPUs ran 2.6x slower than two 1-thread ones. sched_yield returns at once when
// nothing else wants the CPU, so on dedicated cores this costs a syscall per 64 pauses.
inline void spin_once(int& spins) {
  cpu_relax();
  if (++spins % 64 == 0) sched_yield();
}

// Persistent workers: a decode step issues hundreds of small products, and spawning threads
// for each cost more than the products themselves. Workers spin briefly after a job (the next
// one usually follows within microseconds), then sleep on a condition variable. Work is split
// into the same contiguous ranges as before, so results never depend on the pool.
class WorkerPool {
 public:
  explicit WorkerPool(int size) : size_(size) {
    const std::vector<int> cpus = pin_wanted() ? all_cpus() : std::vector<int>{};
    for (int i = 1; i < size; ++i) {
      threads_.emplace_back([this, i] { work(i); });
      if (!cpus.empty()) pin_to(threads_.back().native_handle(), cpus[size_t(i) % cpus.size()]);
    }
    if (!cpus.empty()) pin_to(pthread_self(), cpus[0]);
    else if (g_caller_pinned) unpin(pthread_self());
    g_caller_pinned = !cpus.empty();
  }
  ~WorkerPool() {
    {
      std::lock_guard<std::mutex> lk(m_);
      stop_ = true;
      gen_.fetch_add(1);
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
  }
  int size() const { return size_; }

  // Runs fn over `parts` contiguous chunks of [0, n); chunk 0 on the calling thread. With a
  // grain, [0, n) is instead cut into chunks of `grain` that the threads (workers below
  // `parts`) take in turn from a shared counter, so that a thread that starts late or runs
  // slower takes fewer of them.
  void run(int64_t n, int64_t parts, const std::function<void(int64_t, int64_t)>& fn, int64_t grain = 0) {
    fn_ = &fn;
    n_ = n;
    parts_ = parts;
    chunk_ = grain > 0 ? grain : (n + parts - 1) / parts;
    dynamic_ = grain > 0;
    next_.store(0, std::memory_order_relaxed);
    pending_.store(size_ - 1);
    gen_.fetch_add(1);
    if (sleeping_.load() > 0) {
      std::lock_guard<std::mutex> lk(m_);
      wake_.notify_all();
    }
    run_chunk(0);
    for (int spins = 0; pending_.load(std::memory_order_acquire) > 0;) spin_once(spins);
    if (error_) {  // a chunk threw (on this thread or a worker): rethrown once every chunk is done
      std::exception_ptr e = std::move(error_);
      error_ = nullptr;
      std::rethrow_exception(e);
    }
  }

 private:
  void work(int index) {
    uint64_t seen = 0;
    for (;;) {
      uint64_t g = gen_.load(std::memory_order_acquire);
      if (g == seen) {
        const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(200);
        int spins = 0;
        while ((g = gen_.load(std::memory_order_acquire)) == seen) {
          spin_once(spins);
          if (spins % 256 == 0 && std::chrono::steady_clock::now() > until) break;
        }
      }
      if (g == seen) {
        std::unique_lock<std::mutex> lk(m_);
        sleeping_.fetch_add(1);
        wake_.wait(lk, [&] { return gen_.load() != seen; });
        sleeping_.fetch_sub(1);
        g = gen_.load();
      }
      seen = g;
      if (stop_) return;
      if (index < parts_) run_chunk(index);
      pending_.fetch_sub(1, std::memory_order_release);
    }
  }

  // Never throws: an exception escaping a worker thread would end the process (a bad_alloc in
  // a kernel's scratch, say), so the first one is kept for the caller to rethrow.
  void run_chunk(int64_t index) {
    if (!dynamic_) return run_range(index * chunk_);
    for (;;) {
      const int64_t b = next_.fetch_add(1, std::memory_order_relaxed) * chunk_;
      if (b >= n_) return;
      run_range(b);
    }
  }
  void run_range(int64_t b) {
    const int64_t e = std::min(n_, b + chunk_);
    if (b >= e) return;
    try {
      (*fn_)(b, e);
    } catch (...) {
      std::lock_guard<std::mutex> lk(error_mutex_);
      if (!error_) error_ = std::current_exception();
    }
  }

  const int size_;
  std::vector<std::thread> threads_;
  std::mutex m_;
  std::condition_variable wake_;
  std::atomic<uint64_t> gen_{0};
  std::atomic<int> pending_{0}, sleeping_{0};
  bool stop_ = false;
  // The current job; written before gen_ is bumped, read after it is seen.
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0, parts_ = 0, chunk_ = 0;
  bool dynamic_ = false;
  std::atomic<int64_t> next_{0};  // the next chunk, in dynamic runs
  std::mutex error_mutex_;
  std::exception_ptr error_;
};

// One pool at a time; a second caller (another thread, or a job that itself calls
// parallel_for) runs inline rather than waiting.
std::mutex g_pool_mutex;
WorkerPool* g_pool = nullptr;  // never destroyed: workers may still sleep at exit
thread_local bool t_in_job = false;
std::vector<int> all_cpus() { return allowed_cpus(); }
}  // namespace

int num_threads() {
  int t = g_threads.load();
  if (t <= 0) {
    t = default_threads();
    g_threads.store(t);
  }
  return t;
}

void set_pin_threads(bool on) {
  std::lock_guard<std::mutex> lk(g_pool_mutex);
  g_pin = on ? 1 : 0;
  delete g_pool;  // rebuilt (pinned or not) by the next parallel_for
  g_pool = nullptr;
}

bool pin_threads() {
  std::lock_guard<std::mutex> lk(g_pool_mutex);
  return pin_wanted();
}

std::vector<int> allowed_cpus() {
  // Read once, before anything is pinned: a pinned thread's own mask is a single CPU.
  static const std::vector<int> cpus = [] {
    std::vector<int> out;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0)
      for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &set)) out.push_back(c);
    return out;
  }();
  return cpus;
}

void set_num_threads(int n) { g_threads.store(n > 0 ? n : int(std::max(1u, std::thread::hardware_concurrency()))); }

namespace {
void run_on_pool(int64_t n, int64_t min_per_thread, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  const int threads = num_threads();
  const int64_t t = std::min<int64_t>(threads, n / std::max<int64_t>(1, min_per_thread));
  if (t <= 1 || t_in_job || !g_pool_mutex.try_lock()) {
    fn(0, n);
    return;
  }
  std::lock_guard<std::mutex> lk(g_pool_mutex, std::adopt_lock);
  if (!g_pool || g_pool->size() != threads) {
    delete g_pool;
    g_pool = new WorkerPool(threads);
  }
  struct InJob {
    InJob() { t_in_job = true; }
    ~InJob() { t_in_job = false; }
  } in_job;
  g_pool->run(n, t, fn, grain);
}
}  // namespace

void parallel_for(int64_t n, int64_t min_per_thread, const std::function<void(int64_t, int64_t)>& fn) {
  run_on_pool(n, min_per_thread, 0, fn);
}

void parallel_for_dynamic(int64_t n, int64_t min_per_thread, int64_t grain,
                          const std::function<void(int64_t, int64_t)>& fn) {
  run_on_pool(n, min_per_thread, std::max<int64_t>(1, grain), fn);
}

}  // namespace strata::kernels
