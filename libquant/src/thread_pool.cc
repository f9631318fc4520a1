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
  // Workers still running the current round.
  std::atomic<uint32_t> pending{0};
  TaskFn fn = nullptr;
  const void* ctx = nullptr;
  bool stop = false;
  std::vector<std::thread> workers;

  void worker_loop(size_t index) {
    uint32_t seen = 0;
    for (;;) {
      seen = wait_for_change(generation, seen);
      if (stop) return;
      fn(ctx, index);
      if (pending.fetch_sub(1, std::memory_order_acq_rel) == 1) pending.notify_one();
    }
  }
};

ThreadPool::ThreadPool(size_t num_threads)
    : num_threads_(num_threads != 0 ? num_threads
                                    : std::max<size_t>(1, std::thread::hardware_concurrency())),
      shared_(std::make_unique<Shared>()) {
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
  s.generation.fetch_add(1, std::memory_order_release);
  s.generation.notify_all();
  fn(ctx, 0);
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
