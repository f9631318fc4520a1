// ThreadPool: every thread runs each round once, ranges cover the work
// exactly and deterministically, and the pool survives many rounds.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <thread>
#include <vector>

#include "lamina/quant/thread_pool.h"

namespace lamina::quant {
namespace {

TEST(ThreadPool, RunsTaskOncePerThread) {
  for (const size_t n : {size_t{1}, size_t{2}, size_t{3}}) {
    ThreadPool pool(n);
    ASSERT_EQ(pool.num_threads(), n);
    std::vector<std::atomic<int>> calls(n);
    const std::thread::id caller = std::this_thread::get_id();
    std::atomic<bool> thread0_is_caller{false};
    pool.run_on_all([&](size_t t) {
      calls[t].fetch_add(1);
      if (t == 0) thread0_is_caller = std::this_thread::get_id() == caller;
    });
    for (size_t t = 0; t < n; ++t) EXPECT_EQ(calls[t].load(), 1) << "thread " << t;
    EXPECT_TRUE(thread0_is_caller);
  }
}

TEST(ThreadPool, DefaultUsesHardwareThreads) {
  ThreadPool pool;
  EXPECT_GE(pool.num_threads(), 1u);
}

TEST(ThreadPool, ParallelForCoversRangeOnceInGranules) {
  ThreadPool pool(3);
  for (const size_t n : {size_t{0}, size_t{1}, size_t{5}, size_t{16}, size_t{17}, size_t{1000}}) {
    for (const size_t granule : {size_t{1}, size_t{4}, size_t{16}}) {
      std::vector<std::atomic<int>> hits(n);
      pool.parallel_for(n, granule, [&](size_t begin, size_t end) {
        EXPECT_LT(begin, end);
        EXPECT_TRUE(begin % granule == 0);
        EXPECT_TRUE(end % granule == 0 || end == n);
        for (size_t i = begin; i < end; ++i) hits[i].fetch_add(1);
      });
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "n " << n << " item " << i;
    }
  }
}

TEST(ThreadPool, RangesAreDeterministicAndBalanced) {
  ThreadPool pool(2);
  const auto [b0, e0] = pool.thread_range(100, 16, 0);
  const auto [b1, e1] = pool.thread_range(100, 16, 1);
  EXPECT_EQ(b0, 0u);
  EXPECT_EQ(e0, b1);
  EXPECT_EQ(e1, 100u);
  EXPECT_EQ(e0, 48u);  // 7 granules of 16 split 3 + 4
  // The same item always lands on the same thread.
  for (int round = 0; round < 10; ++round) {
    std::vector<std::atomic<int>> owner(100);
    pool.run_on_all([&](size_t t) {
      const auto [b, e] = pool.thread_range(100, 16, t);
      for (size_t i = b; i < e; ++i) owner[i] = static_cast<int>(t);
    });
    for (size_t i = 0; i < 100; ++i) ASSERT_EQ(owner[i].load(), i < 48 ? 0 : 1);
  }
}

TEST(ThreadPool, ManyRoundsBackToBack) {
  ThreadPool pool(2);
  std::atomic<long> total{0};
  for (int round = 0; round < 2000; ++round) {
    pool.parallel_for(64, 1, [&](size_t begin, size_t end) {
      total.fetch_add(static_cast<long>(end - begin));
    });
  }
  EXPECT_EQ(total.load(), 2000L * 64);
}

// Rounds that start while the workers sleep (after a pause) or spin (back
// to back): the caller runs the shares no worker has started, so which OS
// thread runs an index varies, but each index runs exactly once per round,
// with that round's task.
TEST(ThreadPool, EachIndexOncePerRoundWhoeverRunsIt) {
  ThreadPool pool(3);
  std::vector<std::atomic<int>> calls(3);
  for (int round = 0; round < 400; ++round) {
    if (round % 4 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    pool.run_on_all([&, round](size_t t) { calls[t].fetch_add(round); });
    const int expected = round * (round + 1) / 2;
    for (size_t t = 0; t < 3; ++t) ASSERT_EQ(calls[t].load(), expected) << "index " << t << ", round " << round;
  }
}

// Workers that have spun out and sleep must wake for the next round: index 0
// (the caller) holds its share until every other index has run, so no share
// can fall back to the caller and each must run on a woken worker. The wait
// is bounded so that a worker that never wakes fails the test instead of
// hanging it.
TEST(ThreadPool, SleepingWorkersWakeForTheNextRound) {
  constexpr size_t kThreads = 3;
  ThreadPool pool(kThreads);
  for (int round = 0; round < 5; ++round) {
    // Far longer than the spin before a worker sleeps (well under 1 ms).
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const std::thread::id caller = std::this_thread::get_id();
    std::atomic<size_t> others_done{0};
    std::vector<std::thread::id> ran_on(kThreads);
    bool all_ran = false;
    pool.run_on_all([&](size_t t) {
      ran_on[t] = std::this_thread::get_id();
      if (t != 0) {
        others_done.fetch_add(1, std::memory_order_release);
        return;
      }
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      const auto others_ran = [&] { return others_done.load(std::memory_order_acquire) == kThreads - 1; };
      while (!others_ran() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
      all_ran = others_ran();
    });
    ASSERT_TRUE(all_ran) << "round " << round << ": a sleeping worker did not wake";
    for (size_t t = 1; t < kThreads; ++t) EXPECT_NE(ran_on[t], caller) << "index " << t << ", round " << round;
  }
}

}  // namespace
}  // namespace lamina::quant
