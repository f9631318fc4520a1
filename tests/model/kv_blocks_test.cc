// The engine's KV block pool: holders, reservations, the trie of cached
// blocks (sharing whole blocks, partial matches), least-recently-released
// eviction, and that a block another holds is never handed out for writing.
#include <gtest/gtest.h>

#include <numeric>
#include <stdexcept>
#include <utility>
#include <vector>

#include "engine/kv_blocks.h"
#include "lamina/model/kv_cache.h"

namespace lamina::model::engine {
namespace {

constexpr uint32_t B = kKvBlockPositions;

// Tokens start, start + 1, ... (n of them).
std::vector<int32_t> run(int32_t start, uint32_t n) {
  std::vector<int32_t> t(n);
  std::iota(t.begin(), t.end(), start);
  return t;
}

std::span<const int32_t> block_of(const std::vector<int32_t>& tokens, uint32_t i) {
  return std::span<const int32_t>(tokens).subspan(i * B, std::min<std::size_t>(B, tokens.size() - i * B));
}

// Takes two blocks and caches them: a whole one of tokens 0.. and under it
// one of `n` tokens; both still held.
std::pair<uint32_t, uint32_t> cache_chain(KvBlockPool& pool, uint32_t n) {
  EXPECT_TRUE(pool.reserve(2));
  const uint32_t parent = pool.take_reserved(), child = pool.take_reserved();
  pool.insert(kNoBlock, parent, run(0, B));
  pool.insert(parent, child, run(B, n));
  return {parent, child};
}

TEST(KvBlockPool, ReservationsAndHoldersKeepTheCounts) {
  KvBlockPool pool(4);
  EXPECT_EQ(pool.available(), 4u);
  ASSERT_TRUE(pool.reserve(3));
  EXPECT_FALSE(pool.reserve(2)) << "only one left beyond the reservation";
  EXPECT_EQ(pool.available(), 1u);
  const uint32_t a = pool.take_reserved();
  EXPECT_EQ(a, 0u) << "block 0 first";
  EXPECT_EQ(pool.n_in_use(), 1u);
  EXPECT_EQ(pool.n_reserved(), 2u);
  EXPECT_EQ(pool.available(), 1u) << "taking a reserved block leaves what others may reserve";
  pool.hold(a);
  EXPECT_EQ(pool.holders(a), 2u);
  pool.release(a);
  pool.release(a);
  EXPECT_EQ(pool.n_free(), 4u) << "an uncached block is free once nobody holds it";
  EXPECT_THROW(pool.release(a), std::logic_error);
  EXPECT_THROW(pool.hold(a), std::logic_error) << "a free block has no contents to share";
  pool.unreserve(2);
  EXPECT_EQ(pool.available(), 4u);
  EXPECT_THROW(pool.take_reserved(), std::logic_error);
}

TEST(KvBlockPool, WholeBlocksAreSharedAndAPartlyMatchingOneIsCopied) {
  KvBlockPool pool(8);
  const std::vector<int32_t> first = run(1000, 2 * B + 44);  // two full blocks and a partial one
  ASSERT_TRUE(pool.reserve(3));
  std::vector<uint32_t> table;
  for (uint32_t i = 0; i < 3; ++i) {
    table.push_back(pool.take_reserved());
    EXPECT_EQ(pool.insert(i == 0 ? kNoBlock : table[i - 1], table[i], block_of(first, i)), kNoBlock);
  }
  for (auto it = table.rbegin(); it != table.rend(); ++it) pool.release(*it);
  EXPECT_EQ(pool.n_cached_idle(), 3u);
  EXPECT_EQ(pool.n_free(), 5u);
  EXPECT_EQ(pool.available(), 8u) << "cached idle blocks count as available";

  // The same tokens and more: both full blocks by reference, the partial one copied.
  std::vector<int32_t> longer = first;
  for (int32_t t : run(5, 100)) longer.push_back(t);
  BlockMatch m = pool.match(longer, longer.size() - 1);
  EXPECT_EQ(m.full, (std::vector<uint32_t>{table[0], table[1]}));
  EXPECT_EQ(m.partial, table[2]);
  EXPECT_EQ(m.partial_len, 44u);
  EXPECT_EQ(m.positions(), 2 * B + 44);

  // Diverging inside the second block: the first shared, 100 positions of the second to copy.
  std::vector<int32_t> diverging = first;
  diverging[B + 100] = -5;
  m = pool.match(diverging, diverging.size());
  EXPECT_EQ(m.full, (std::vector<uint32_t>{table[0]}));
  EXPECT_EQ(m.partial, table[1]);
  EXPECT_EQ(m.partial_len, 100u);

  // At most max_positions: the same prompt keeps its last token to compute.
  m = pool.match(first, first.size() - 1);
  EXPECT_EQ(m.positions(), first.size() - 1);
  m = pool.match(first, B);
  EXPECT_EQ(m.full.size(), 1u);
  EXPECT_EQ(m.partial, kNoBlock);

  EXPECT_EQ(pool.match(run(7, 300), 299).positions(), 0u) << "different tokens match nothing";
}

TEST(KvBlockPool, ADuplicateBlockIsNotCachedTwice) {
  KvBlockPool pool(4);
  const std::vector<int32_t> tokens = run(3, B);
  ASSERT_TRUE(pool.reserve(2));
  const uint32_t a = pool.take_reserved(), b = pool.take_reserved();
  EXPECT_EQ(pool.insert(kNoBlock, a, tokens), kNoBlock);
  EXPECT_EQ(pool.insert(kNoBlock, b, tokens), a) << "the cached twin is named instead";
  EXPECT_FALSE(pool.cached(b));
  // A partial block after it is recorded.
  EXPECT_EQ(pool.insert(a, b, run(0, 10)), kNoBlock);
  pool.release(b);
  pool.release(a);
  EXPECT_EQ(pool.n_cached_idle(), 2u);
  // A later full block extending the idle partial one replaces it.
  ASSERT_TRUE(pool.reserve(1));
  const uint32_t c = pool.take_reserved();
  pool.hold(a);
  EXPECT_EQ(pool.insert(a, c, run(0, B)), kNoBlock);
  EXPECT_FALSE(pool.cached(b)) << "the covered partial block was evicted";
  EXPECT_EQ(pool.n_free(), 2u);
}

TEST(KvBlockPool, EvictionTakesTheLeastRecentlyReleasedWithItsSubtree) {
  KvBlockPool pool(4);
  ASSERT_TRUE(pool.reserve(4));
  std::vector<uint32_t> blocks;
  for (int i = 0; i < 4; ++i) blocks.push_back(pool.take_reserved());
  // Two chains: x0 -> x1 and y0 -> y1.
  pool.insert(kNoBlock, blocks[0], run(0, B));
  pool.insert(blocks[0], blocks[1], run(B, B));
  pool.insert(kNoBlock, blocks[2], run(9000, B));
  pool.insert(blocks[2], blocks[3], run(9000 + B, B));
  // Chain x released first, deeper block first; then chain y.
  pool.release(blocks[1]);
  pool.release(blocks[0]);
  pool.release(blocks[3]);
  pool.release(blocks[2]);
  EXPECT_EQ(pool.n_cached_idle(), 4u);
  EXPECT_EQ(pool.n_free(), 0u);

  ASSERT_TRUE(pool.reserve(1));
  EXPECT_EQ(pool.take_reserved(), blocks[1]) << "x1 was released first";
  EXPECT_TRUE(pool.cached(blocks[0]));
  EXPECT_EQ(pool.match(run(0, 2 * B), 2 * B).full, (std::vector<uint32_t>{blocks[0]}));

  // Touching chain y (held, then released again) makes x0 the oldest.
  pool.hold(blocks[2]);
  pool.release(blocks[2]);
  ASSERT_TRUE(pool.reserve(1));
  EXPECT_EQ(pool.take_reserved(), blocks[0]);

  // Evicting y0 drops y1 under it: both become free, one is taken.
  ASSERT_TRUE(pool.reserve(1));
  pool.hold(blocks[2]);  // y0 is in use: y1 goes, y0 stays
  EXPECT_EQ(pool.take_reserved(), blocks[3]);
  pool.release(blocks[2]);
  ASSERT_TRUE(pool.reserve(1));
  EXPECT_EQ(pool.take_reserved(), blocks[2]);
  EXPECT_EQ(pool.match(run(9000, 2 * B), 2 * B).positions(), 0u);
}

TEST(KvBlockPool, EvictingAParentFreesItsCachedChildren) {
  KvBlockPool pool(2);
  const auto [parent, child] = cache_chain(pool, 5);
  pool.release(parent);  // released before its child: the oldest
  pool.release(child);
  ASSERT_TRUE(pool.reserve(2));
  EXPECT_EQ(pool.take_reserved(), parent);
  EXPECT_FALSE(pool.cached(child)) << "nothing reaches it without its parent";
  EXPECT_EQ(pool.n_cached_idle(), 0u);
  EXPECT_EQ(pool.n_free(), 1u);
  EXPECT_EQ(pool.take_reserved(), child);
}

TEST(KvBlockPool, ABlockAnotherHoldsOrTheCacheKnowsIsNeverWritten) {
  KvBlockPool pool(4);
  ASSERT_TRUE(pool.reserve(2));
  const uint32_t own = pool.take_reserved();
  EXPECT_EQ(pool.writable(own), own) << "held by its writer alone";
  pool.hold(own);  // a second sequence shares it
  const uint32_t copy = pool.writable(own);
  EXPECT_NE(copy, own) << "copy-on-write";
  EXPECT_EQ(pool.holders(copy), 1u);
  pool.release(own);
  EXPECT_EQ(pool.holders(own), 1u) << "the other sharer keeps it";

  const uint32_t cached = pool.take_reserved();
  pool.insert(kNoBlock, cached, run(0, B));
  const uint32_t fresh = pool.writable(cached);
  EXPECT_NE(fresh, cached) << "the trie's contents stay as recorded";
  EXPECT_EQ(pool.n_in_use(), 4u);
  EXPECT_THROW(pool.writable(cached), std::logic_error) << "no block left beyond the reservations";
}

TEST(KvBlockPool, AnIdleCachedLeafCanBeTakenOverWithItsContents) {
  KvBlockPool pool(2);
  const auto [parent, leaf] = cache_chain(pool, 7);
  EXPECT_EQ(pool.cached_length(leaf), 7u);
  EXPECT_FALSE(pool.take_reserved_cached(leaf)) << "held: not idle";
  pool.release(leaf);
  pool.release(parent);
  ASSERT_TRUE(pool.reserve(1));
  EXPECT_FALSE(pool.take_reserved_cached(parent)) << "something is cached under it";
  EXPECT_TRUE(pool.take_reserved_cached(leaf));
  EXPECT_EQ(pool.holders(leaf), 1u);
  EXPECT_FALSE(pool.cached(leaf));
  EXPECT_EQ(pool.n_reserved(), 0u);
  EXPECT_EQ(pool.match(run(0, B + 7), B + 7).positions(), B) << "the trie no longer offers it";
}

}  // namespace
}  // namespace lamina::model::engine
