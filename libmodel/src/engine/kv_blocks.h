// The engine's bookkeeping of the KV cache's blocks (lamina/model/kv_cache.h):
// which are free, how many sequences hold each, and a trie of the blocks
// whose contents are known, for reuse across requests (the prefix cache).
//
// A block's keys and values depend only on the tokens at and before its
// positions, and the forward pass is batch-invariant, so two sequences whose
// tokens agree up to a position hold bit-identical rows up to it. The trie
// therefore keys each cached block by its tokens under its parent block (the
// block before it in the sequences that hold it): a path from the root
// spells a token prefix. Full blocks (kKvBlockPositions tokens) enter it as
// a sequence fills them and are shared by reference; a finished sequence's
// last block enters it partial and is only ever copied from. A sequence
// never writes a block that another holds or that the trie knows; its
// positions are written only into blocks it alone holds.
//
// Blocks nobody holds but the trie knows stay cached and count as available:
// taking a block when none is free evicts the least recently released one
// (deeper blocks of a released sequence go first), with the blocks cached
// under it. Reservations keep blocks back for sequences that will need them,
// so a running sequence never finds the pool empty.
// Lives on the engine thread only.
#pragma once

#include <cstdint>
#include <limits>
#include <set>
#include <span>
#include <utility>
#include <vector>

namespace lamina::model::engine {

inline constexpr uint32_t kNoBlock = std::numeric_limits<uint32_t>::max();

// The cached blocks that serve a token sequence: `full` by reference (each
// all kKvBlockPositions positions), then `partial_len` leading positions of
// `partial` to copy (kNoBlock: none).
struct BlockMatch {
  std::vector<uint32_t> full;
  uint32_t partial = kNoBlock;
  uint32_t partial_len = 0;
  std::size_t positions() const;
};

class KvBlockPool {
 public:
  explicit KvBlockPool(uint32_t n_blocks);

  uint32_t n_blocks() const { return static_cast<uint32_t>(blocks_.size()); }
  uint32_t n_free() const { return static_cast<uint32_t>(free_.size()); }
  // Cached (in the trie) and held by no sequence: evictable.
  uint32_t n_cached_idle() const { return static_cast<uint32_t>(idle_.size()); }
  uint32_t n_in_use() const { return n_blocks() - n_free() - n_cached_idle(); }
  uint32_t n_reserved() const { return reserved_; }
  // Blocks a new reservation may take: free or evictable, not reserved.
  uint32_t available() const { return n_free() + n_cached_idle() - reserved_; }

  // Keeps `n` blocks back; false (nothing kept) when fewer are available.
  bool reserve(uint32_t n);
  void unreserve(uint32_t n);

  // A block for one reserved one (the reservation shrinks by one): a free
  // block, else the least recently released cached one other than `keep`
  // (evicted with what is cached under it). Held once.
  uint32_t take_reserved(uint32_t keep = kNoBlock);
  // Like take_reserved, but the block is `block`, a cached idle one with
  // nothing cached under it: it leaves the trie with its contents, for a
  // sequence that goes on from them (no copy). Returns false, changing
  // nothing, for any other block.
  bool take_reserved_cached(uint32_t block);
  // A block beyond any reservation; throws std::logic_error when none is available.
  uint32_t take_unreserved();
  // One more holder; a cached idle block stops being evictable (the caller
  // accounts for it: available() drops by one).
  void hold(uint32_t block);
  // One holder fewer; at none the block is cached idle when the trie knows
  // it, else free.
  void release(uint32_t block);
  uint32_t holders(uint32_t block) const { return blocks_.at(block).holders; }
  bool cached(uint32_t block) const { return blocks_.at(block).in_trie; }
  // Positions a cached block holds (0 for others).
  std::size_t cached_length(uint32_t block) const { return blocks_.at(block).tokens.size(); }
  // Cached and held by nobody.
  bool evictable(uint32_t block) const;

  // The cached blocks that hold the longest prefix of `tokens`, at most
  // `max_positions` of them: whole matching blocks down the trie, then the
  // child sharing the most leading tokens with the rest.
  BlockMatch match(std::span<const int32_t> tokens, std::size_t max_positions) const;

  // Records that `block` holds `tokens` (at most kKvBlockPositions) after
  // `parent` (kNoBlock: at the start). When the parent is not cached, or a
  // cached sibling already holds these tokens (or, for a partial block,
  // starts with them), nothing is recorded and that sibling (kNoBlock when
  // none) is returned, so the caller may hold it instead. A cached partial
  // sibling whose tokens this block starts with is evicted if idle.
  uint32_t insert(uint32_t parent, uint32_t block, std::span<const int32_t> tokens);

  // For a sequence about to write into `block`: the block itself when it
  // alone holds it and the trie does not know it; else a new block taken
  // beyond the reservation, into which the caller copies the positions
  // already written, then releases `block` (copy-on-write).
  uint32_t writable(uint32_t block);

 private:
  struct Block {
    uint32_t holders = 0;
    bool in_trie = false;
    uint32_t parent = kNoBlock;
    std::vector<int32_t> tokens;    // in the trie: what its positions hold
    std::vector<uint32_t> children;
    uint64_t released_at = 0;       // idle ones: when the last holder let go
  };

  std::vector<uint32_t>& children_of(uint32_t parent);
  const std::vector<uint32_t>& children_of(uint32_t parent) const;
  uint32_t take_block(uint32_t keep);
  // Drops `block` and its cached descendants from the trie into the free list.
  void evict(uint32_t block);

  std::vector<Block> blocks_;
  std::vector<uint32_t> roots_;  // cached first blocks
  std::vector<uint32_t> free_;   // taken from the back
  // Idle cached blocks, least recently released first.
  std::set<std::pair<uint64_t, uint32_t>> idle_;
  uint64_t clock_ = 0;
  uint32_t reserved_ = 0;
};

}  // namespace lamina::model::engine
