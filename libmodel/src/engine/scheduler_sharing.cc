// Reuse of KV positions between requests: the cached blocks of the trie
// (prefix cache) and the blocks of running requests, shared by reference
// where whole, copied where a block matches only partly; and followers,
// requests that wait for a running one to compute the prompt prefix they
// share (n > 1 samples of one prompt). At least a prompt's last token is
// computed in its own slot, for its logits; the batch-invariant forward pass
// gives reused positions the bits computing them would.
#include <algorithm>
#include <stdexcept>

#include "engine/scheduler.h"

namespace lamina::model::engine {

BlockMatch Scheduler::best_match(std::span<const int32_t> prompt) const {
  const std::size_t cap = prompt.size() - 1;
  BlockMatch best = options_.prefix_cache ? pool_.match(prompt, cap) : BlockMatch{};
  for (const auto& seq : active_) {
    const Slot& slot = slots_[seq->slot()];
    if (slot.leader) continue;  // holds nothing yet
    const std::size_t n = std::min<std::size_t>(seq->n_cached(), cap);
    std::size_t shared = 0;
    while (shared < n && seq->token_at(static_cast<uint32_t>(shared)) == prompt[shared]) ++shared;
    if (shared <= best.positions()) continue;
    // Its whole blocks below n_cached() are written and never written again.
    best = BlockMatch{};
    best.full.assign(slot.table.begin(), slot.table.begin() + static_cast<std::ptrdiff_t>(shared / kKvBlockPositions));
    if (shared % kKvBlockPositions != 0) {
      best.partial = slot.table[shared / kKvBlockPositions];
      best.partial_len = static_cast<uint32_t>(shared % kKvBlockPositions);
    }
  }
  return best;
}

// Blocks the pool gives up for a sequence taking `m`: its worst case less
// the blocks it shares, plus the shared ones only the cache held (they stop
// being evictable).
uint32_t Scheduler::match_cost(const BlockMatch& m, uint32_t worst_case) const {
  uint32_t cost = worst_case - static_cast<uint32_t>(m.full.size());
  for (uint32_t b : m.full) cost += pool_.evictable(b) ? 1 : 0;
  return cost;
}

const Sequence* Scheduler::leader_for(const Sequence& follower, std::size_t matched, bool pending,
                                      std::size_t& length) const {
  const std::vector<int32_t>& prompt = follower.request().prompt_ids;
  const std::size_t cap = prompt.size() - 1;
  const Sequence* leader = nullptr;
  std::size_t best = matched;
  auto consider = [&](const Sequence& seq) {
    if (&seq == &follower || seq.finished()) return;
    const std::size_t shared = std::min(common_prefix(seq.request().prompt_ids, prompt), cap);
    if (shared <= best || seq.n_cached() >= shared) return;
    best = shared;
    leader = &seq;
  };
  for (const auto& seq : active_) consider(*seq);
  if (pending)
    for (const Pending& p : pending_) consider(*p.sequence);
  length = best;
  return leader;
}

uint32_t Scheduler::take_match(uint32_t s, std::span<const int32_t> prompt, uint32_t worst_case, uint32_t budget) {
  Slot& slot = slots_[s];
  const BlockMatch m = best_match(prompt);
  if (match_cost(m, worst_case) > budget + pool_.available())
    throw std::logic_error("the KV blocks reserved for a request are gone");
  pool_.unreserve(budget);
  for (uint32_t b : m.full) {
    pool_.hold(b);
    slot.table.push_back(b);
  }
  slot.table_changed = true;
  slot.reserved = worst_case - static_cast<uint32_t>(m.full.size());
  if (!pool_.reserve(slot.reserved)) {
    slot.reserved = 0;
    throw std::logic_error("the KV blocks reserved for a request are gone");
  }
  if (m.partial == kNoBlock) return static_cast<uint32_t>(m.positions());
  // An idle cached block that this prompt extends, or that only evicting
  // could replace, becomes the sequence's own (no copy); else its matching
  // positions are copied into a new block.
  const bool only_one_left = pool_.n_free() == 0 && pool_.n_cached_idle() == 1 && pool_.evictable(m.partial);
  if ((m.partial_len == pool_.cached_length(m.partial) || only_one_left) && pool_.take_reserved_cached(m.partial)) {
    slot.table.push_back(m.partial);
    --slot.reserved;
    return static_cast<uint32_t>(m.positions());
  }
  if (only_one_left) return static_cast<uint32_t>(m.full.size()) * kKvBlockPositions;
  slot.table.push_back(pool_.take_reserved(m.partial));
  --slot.reserved;
  forward_.copy_kv_block(m.partial, slot.table.back(), m.partial_len);
  if (pool_.evictable(m.partial)) {  // just used: the last to evict
    pool_.hold(m.partial);
    pool_.release(m.partial);
  }
  return static_cast<uint32_t>(m.positions());
}

bool Scheduler::ready_to_prefill(Sequence& seq) {
  Slot& slot = slots_[seq.slot()];
  if (!slot.leader) return true;
  const auto leader = std::find_if(active_.begin(), active_.end(), [&](const auto& s) { return s->id() == *slot.leader; });
  // It waits while the leader runs and has not computed the shared positions yet.
  if (leader != active_.end() && !(*leader)->finished() && (*leader)->n_cached() < slot.follow_length) return false;
  slot.leader.reset();
  const uint32_t budget = slot.reserved;
  slot.reserved = 0;
  const uint32_t cached = take_match(seq.slot(), seq.request().prompt_ids, worst_case_blocks(seq.request(), n_ctx_), budget);
  seq.adopt_prefix(cached);
  cached_prompt_total_ += cached;
  return true;
}

}  // namespace lamina::model::engine
