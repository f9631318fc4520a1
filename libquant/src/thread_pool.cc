#include "lamina/quant/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace lamina::quant {
namespace {

// Kernel calls follow each other closely (one per layer and weight matrix),
// so a waiting thread first spins for a while before it sleeps: waking a
// sleeping thread costs several microseconds, a whole small matvec's worth.
constexpr int kSpinIterations = 1 << 14;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Waits until `value` differs from `old`: spin first, then block.
template <class T>
T wait_for_change(const std::atomic<T>& value, T old) {
  for (int i = 0; i < kSpinIterations; ++i) {
    const T now = value.load(std::memory_order_acquire);
    if (now != old) return now;
    cpu_relax();
  }
  value.wait(old, std::memory_order_acquire);
  return value.load(std::memory_order_acquire);
}

}  // namespace

struct ThreadPool::Shared {
  // Bumped by the caller to start a round (or to stop, with `stop` set).
  std::atomic<uint32_t> generation{0};
  // Shares of the current round not yet finished.
  std::atomic<uint32_t> pending{0};
  // claimed[i]: the last round whose share i someone has taken. Share i is
  // run by its worker, or by the caller when that worker has not started it
  // by the time the caller's own share is done: on a machine busy with other
  // programs a worker may wait milliseconds for a core, and the caller then
  // does its share instead of waiting (the task sees the same index, so the
  // result is the same).
  std::unique_ptr<std::atomic<uint32_t>[]> claimed;
  TaskFn fn = nullptr;
  const void* ctx = nullptr;
  bool stop = false;
  std::vector<std::thread> workers;

  // Takes share `index` of round `round` unless someone already has (or a
  // later round has begun, for a worker that woke late).
  bool claim(size_t index, uint32_t round) {
    uint32_t last = claimed[index].load(std::memory_order_relaxed);
    while (static_cast<int32_t>(round - last) > 0) {
      if (claimed[index].compare_exchange_weak(last, round, std::memory_order_acq_rel)) return true;
    }
    return false;
  }

  void finish_share() {
    if (pending.fetch_sub(1, std::memory_order_acq_rel) == 1) pending.notify_one();
  }

  void worker_loop(size_t index) {
    uint32_t seen = 0;
    for (;;) {
      seen = wait_for_change(generation, seen);
      if (stop) return;
      // A successful claim means the caller is still in round `seen` (it
      // waits for this share), so fn and ctx are that round's.
      if (claim(index, seen)) {
        fn(ctx, index);
        finish_share();
      }
    }
  }
};

ThreadPool::ThreadPool(size_t num_threads)
    : num_threads_(num_threads != 0 ? num_threads
                                    : std::max<size_t>(1, std::thread::hardware_concurrency())),
      shared_(std::make_unique<Shared>()) {
  shared_->claimed = std::make_unique<std::atomic<uint32_t>[]>(num_threads_);
  for (size_t i = 0; i < num_threads_; ++i) shared_->claimed[i].store(0, std::memory_order_relaxed);
  shared_->workers.reserve(num_threads_ - 1);
  for (size_t i = 1; i < num_threads_; ++i) {
    shared_->workers.emplace_back([shared = shared_.get(), i] { shared->worker_loop(i); });
  }
}

ThreadPool::~ThreadPool() {
  shared_->stop = true;
  shared_->generation.fetch_add(1, std::memory_order_release);
  shared_->generation.notify_all();
  for (std::thread& t : shared_->workers) t.join();
}

void ThreadPool::run(TaskFn fn, const void* ctx) {
  if (num_threads_ == 1) {
    fn(ctx, 0);
    return;
  }
  Shared& s = *shared_;
  s.fn = fn;
  s.ctx = ctx;
  s.pending.store(static_cast<uint32_t>(num_threads_ - 1), std::memory_order_relaxed);
  const uint32_t round = s.generation.fetch_add(1, std::memory_order_release) + 1;
  s.generation.notify_all();
  fn(ctx, 0);
  // The shares no worker has started yet are run here, in index order.
  for (size_t i = 1; i < num_threads_; ++i) {
    if (s.claim(i, round)) {
      fn(ctx, i);
      s.finish_share();
    }
  }
  for (uint32_t left = s.pending.load(std::memory_order_acquire); left != 0;) {
    left = wait_for_change(s.pending, left);
  }
}

std::pair<size_t, size_t> ThreadPool::thread_range(size_t n, size_t granule, size_t thread) const {
  granule = std::max<size_t>(granule, 1);
  const size_t units = (n + granule - 1) / granule;
  // Balanced split of whole units: shares differ by at most one unit.
  const size_t begin_unit = units * thread / num_threads_;
  const size_t end_unit = units * (thread + 1) / num_threads_;
  return {std::min(n, begin_unit * granule), std::min(n, end_unit * granule)};
}

size_t ThreadPool::dynamic_chunk(size_t n, size_t granule) const {
  granule = std::max<size_t>(granule, 1);
  const size_t pieces = 8 * num_threads_;
  const size_t units = (n + granule - 1) / granule;
  return std::max<size_t>(1, (units + pieces - 1) / pieces) * granule;
}

}  // namespace lamina::quant
