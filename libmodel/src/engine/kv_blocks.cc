#include "engine/kv_blocks.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "engine/scheduler.h"
#include "lamina/model/kv_cache.h"

namespace lamina::model::engine {

std::size_t BlockMatch::positions() const { return full.size() * kKvBlockPositions + partial_len; }

KvBlockPool::KvBlockPool(uint32_t n_blocks) : blocks_(n_blocks) {
  free_.reserve(n_blocks);
  // Block 0 is taken first.
  for (uint32_t b = n_blocks; b > 0; --b) free_.push_back(b - 1);
}

bool KvBlockPool::reserve(uint32_t n) {
  if (n > available()) return false;
  reserved_ += n;
  return true;
}

void KvBlockPool::unreserve(uint32_t n) {
  if (n > reserved_) throw std::logic_error("KV blocks: unreserving more than is reserved");
  reserved_ -= n;
}

uint32_t KvBlockPool::take_block(uint32_t keep) {
  if (free_.empty()) {
    auto victim = idle_.begin();
    if (victim != idle_.end() && victim->second == keep) ++victim;
    if (victim == idle_.end()) throw std::logic_error("KV blocks: the pool is exhausted");
    evict(victim->second);
  }
  const uint32_t b = free_.back();
  free_.pop_back();
  blocks_[b].holders = 1;
  return b;
}

uint32_t KvBlockPool::take_reserved(uint32_t keep) {
  if (reserved_ == 0) throw std::logic_error("KV blocks: a block taken without a reservation");
  --reserved_;
  return take_block(keep);
}

bool KvBlockPool::take_reserved_cached(uint32_t block) {
  Block& b = blocks_.at(block);
  if (!evictable(block) || !b.children.empty() || reserved_ == 0) return false;
  --reserved_;
  std::vector<uint32_t>& siblings = children_of(b.parent);
  siblings.erase(std::find(siblings.begin(), siblings.end(), block));
  idle_.erase({b.released_at, block});
  b = Block{};
  b.holders = 1;
  return true;
}

uint32_t KvBlockPool::take_unreserved() {
  if (available() == 0) throw std::logic_error("KV blocks: no block left beyond the reservations");
  return take_block(kNoBlock);
}

bool KvBlockPool::evictable(uint32_t block) const {
  const Block& b = blocks_.at(block);
  return b.in_trie && b.holders == 0;
}

void KvBlockPool::hold(uint32_t block) {
  Block& b = blocks_.at(block);
  if (b.holders == 0) {
    if (!b.in_trie) throw std::logic_error("KV blocks: holding a free block " + std::to_string(block));
    idle_.erase({b.released_at, block});
  }
  ++b.holders;
}

void KvBlockPool::release(uint32_t block) {
  Block& b = blocks_.at(block);
  if (b.holders == 0) throw std::logic_error("KV blocks: releasing block " + std::to_string(block) + " held by none");
  if (--b.holders > 0) return;
  if (b.in_trie) {
    b.released_at = ++clock_;
    idle_.insert({b.released_at, block});
  } else {
    free_.push_back(block);
  }
}

std::vector<uint32_t>& KvBlockPool::children_of(uint32_t parent) {
  return parent == kNoBlock ? roots_ : blocks_.at(parent).children;
}

const std::vector<uint32_t>& KvBlockPool::children_of(uint32_t parent) const {
  return parent == kNoBlock ? roots_ : blocks_.at(parent).children;
}

void KvBlockPool::evict(uint32_t block) {
  Block& b = blocks_[block];
  // A holder of a block holds every block before it, so what is cached
  // under an idle block is idle too.
  if (b.holders != 0) throw std::logic_error("KV blocks: evicting held block " + std::to_string(block));
  while (!b.children.empty()) evict(b.children.back());
  std::vector<uint32_t>& siblings = children_of(b.parent);
  siblings.erase(std::find(siblings.begin(), siblings.end(), block));
  idle_.erase({b.released_at, block});
  b = Block{};
  free_.push_back(block);
}

BlockMatch KvBlockPool::match(std::span<const int32_t> tokens, std::size_t max_positions) const {
  BlockMatch m;
  tokens = tokens.first(std::min(tokens.size(), max_positions));
  uint32_t parent = kNoBlock;
  for (;;) {
    const std::span<const int32_t> rest = tokens.subspan(m.full.size() * kKvBlockPositions);
    uint32_t next = kNoBlock;
    std::size_t best = 0;
    for (uint32_t child : children_of(parent)) {
      const std::vector<int32_t>& held = blocks_[child].tokens;
      const std::size_t shared = common_prefix(held, rest);
      if (shared == kKvBlockPositions) {
        next = child;
        break;
      }
      if (shared > best) {
        best = shared;
        m.partial = child;
      }
    }
    if (next == kNoBlock) {
      m.partial_len = static_cast<uint32_t>(best);
      if (best == 0) m.partial = kNoBlock;
      return m;
    }
    m.full.push_back(next);
    m.partial = kNoBlock;
    parent = next;
  }
}

uint32_t KvBlockPool::insert(uint32_t parent, uint32_t block, std::span<const int32_t> tokens) {
  Block& b = blocks_.at(block);
  if (b.in_trie || b.holders == 0 || tokens.empty() || tokens.size() > kKvBlockPositions)
    throw std::logic_error("KV blocks: block " + std::to_string(block) + " cannot enter the trie");
  if (parent != kNoBlock && !blocks_.at(parent).in_trie) return kNoBlock;
  std::vector<uint32_t>& siblings = children_of(parent);
  for (uint32_t s : siblings) {
    const std::vector<int32_t>& held = blocks_[s].tokens;
    if (held.size() >= tokens.size() && common_prefix(held, tokens) == tokens.size()) return s;
  }
  // Partial siblings that this block extends are no longer needed.
  std::vector<uint32_t> covered;
  for (uint32_t s : siblings)
    if (evictable(s) && blocks_[s].children.empty() && common_prefix(blocks_[s].tokens, tokens) == blocks_[s].tokens.size())
      covered.push_back(s);
  for (uint32_t s : covered) evict(s);
  b.in_trie = true;
  b.parent = parent;
  b.tokens.assign(tokens.begin(), tokens.end());
  children_of(parent).push_back(block);
  return kNoBlock;
}

uint32_t KvBlockPool::writable(uint32_t block) {
  const Block& b = blocks_.at(block);
  if (b.holders == 1 && !b.in_trie) return block;
  return take_unreserved();
}

}  // namespace lamina::model::engine
