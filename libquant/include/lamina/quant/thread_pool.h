// A fixed pool of worker threads for the kernels: created once, reused by
// every call, with a deterministic split of the work.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>

#include "lamina/quant/export.h"

namespace lamina::quant {

// Only the out-of-line members are exported: the templates below are
// instantiated in the caller's own code.
class ThreadPool {
 public:
  // `num_threads` counts the calling thread, which always takes part as
  // thread 0; 0 means std::thread::hardware_concurrency(). A pool of one
  // thread starts no worker and runs everything on the caller.
  LAMINA_QUANT_API explicit ThreadPool(size_t num_threads = 0);
  LAMINA_QUANT_API ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  size_t num_threads() const { return num_threads_; }

  // Calls task(thread_index) once for each index 0 .. num_threads()-1 and
  // returns when all have returned. Index 0 runs on the caller; index i on
  // worker i, or on the caller when worker i has not started by the time
  // the caller's own share is done (a worker waiting for a core on a busy
  // machine is not waited for). One call at a time per pool; the task must
  // not throw.
  template <class Task>
  void run_on_all(Task&& task) {
    using T = std::remove_reference_t<Task>;
    run([](const void* ctx, size_t thread) { (*static_cast<T*>(const_cast<void*>(ctx)))(thread); },
        &task);
  }

  // Splits [0, n) into num_threads() contiguous ranges and calls
  // body(begin, end) for each non-empty one, in parallel. Range bounds are
  // multiples of `granule` (except n itself) and depend only on n, granule
  // and num_threads(), so a given item always lands on the same thread.
  template <class Body>
  void parallel_for(size_t n, size_t granule, Body&& body) {
    if (n == 0) return;
    if (num_threads_ == 1 || n <= granule) {
      body(size_t{0}, n);
      return;
    }
    run_on_all([&](size_t thread) {
      const auto [begin, end] = thread_range(n, granule, thread);
      if (begin < end) body(begin, end);
    });
  }

  // Like parallel_for, but threads take ranges of about n / (8 threads)
  // (multiples of `granule`) from a shared counter until none is left, so a
  // thread that runs slower (a busy core, a slow wake-up) does less. Which
  // thread runs an item varies from call to call: for work whose result does
  // not depend on the thread (each item computed the same way anywhere).
  template <class Body>
  void parallel_for_dynamic(size_t n, size_t granule, Body&& body) {
    if (n == 0) return;
    if (num_threads_ == 1 || n <= granule) {
      body(size_t{0}, n);
      return;
    }
    const size_t chunk = dynamic_chunk(n, granule);
    std::atomic<size_t> next{0};
    run_on_all([&](size_t) {
      for (size_t begin = next.fetch_add(chunk, std::memory_order_relaxed); begin < n;
           begin = next.fetch_add(chunk, std::memory_order_relaxed)) {
        body(begin, std::min(n, begin + chunk));
      }
    });
  }

  // The range parallel_for gives to `thread`.
  LAMINA_QUANT_API std::pair<size_t, size_t> thread_range(size_t n, size_t granule, size_t thread) const;

 private:
  LAMINA_QUANT_API size_t dynamic_chunk(size_t n, size_t granule) const;
  using TaskFn = void (*)(const void* ctx, size_t thread);
  LAMINA_QUANT_API void run(TaskFn fn, const void* ctx);

  struct Shared;
  size_t num_threads_;
  std::unique_ptr<Shared> shared_;
};

}  // namespace lamina::quant
