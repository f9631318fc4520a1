#include "engine/scheduler.h"

#include <algorithm>
#include <exception>
#include <stdexcept>
#include <utility>

namespace lamina::model::engine {

std::size_t common_prefix(std::span<const int32_t> a, std::span<const int32_t> b) {
  const std::size_t n = std::min(a.size(), b.size());
  std::size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

uint32_t worst_case_blocks(const CompletionRequest& request, uint32_t n_ctx) {
  const uint64_t prompt = request.prompt_ids.size();
  const uint64_t positions =
      request.max_tokens < 0 ? n_ctx : std::min<uint64_t>(prompt + static_cast<uint64_t>(request.max_tokens), n_ctx);
  return kv_blocks_for(static_cast<uint32_t>(std::max(positions, prompt)));
}

Scheduler::Scheduler(Forward& forward, const EngineOptions& options)
    : forward_(forward), options_(options), n_ctx_(forward.n_ctx()), pool_(forward.kv_blocks()),
      slots_(forward.n_seq()) {
  active_.reserve(slots_.size());
}

uint32_t Scheduler::free_slots() const {
  return n_slots() - static_cast<uint32_t>(active_.size() + pending_.size()) - n_lent_;
}

bool Scheduler::reserve_for(const Sequence& sequence) {
  if (free_slots() == 0) return false;
  const std::vector<int32_t>& prompt = sequence.request().prompt_ids;
  const uint32_t worst = worst_case_blocks(sequence.request(), n_ctx_);
  const BlockMatch match = best_match(prompt);
  std::size_t length = 0;
  // A follower takes its blocks later, when what it can reuse may differ:
  // it keeps back its whole worst case.
  const bool follows = leader_for(sequence, match.positions(), true, length) != nullptr;
  const uint32_t need = follows ? worst : match_cost(match, worst);
  if (!pool_.reserve(need)) return false;
  pending_.push_back({&sequence, need, follows});
  return true;
}

const Sequence& Scheduler::admit(std::unique_ptr<Sequence> sequence, Clock::time_point now) {
  const auto p = std::find_if(pending_.begin(), pending_.end(),
                              [&](const Pending& e) { return e.sequence == sequence.get(); });
  if (p == pending_.end()) throw std::logic_error("a request admitted without its KV blocks reserved");
  const Pending pending = *p;
  pending_.erase(p);
  uint32_t s = 0;
  while (slots_[s].busy) ++s;  // reserve_for saw a free slot
  Slot& slot = slots_[s];
  slot = Slot{};
  slot.busy = true;
  slot.reserved = pending.reserved;
  Sequence& running = *sequence;
  active_.push_back(std::move(sequence));
  const std::vector<int32_t>& prompt = running.request().prompt_ids;
  std::size_t length = 0;
  const Sequence* leader = pending.follows ? leader_for(running, best_match(prompt).positions(), false, length) : nullptr;
  if (leader != nullptr) {
    slot.leader = leader->id();
    slot.follow_length = static_cast<uint32_t>(length);
    running.admit(s, 0, now);
    return running;
  }
  uint32_t cached = 0;
  try {
    slot.reserved = 0;
    cached = take_match(s, prompt, worst_case_blocks(running.request(), n_ctx_), pending.reserved);
  } catch (const std::exception& e) {
    running.admit(s, 0, now);
    running.finish(FinishReason::Error, std::string("KV blocks: ") + e.what());
    return running;
  }
  running.admit(s, cached, now);
  cached_prompt_total_ += cached;
  note_usage();
  return running;
}

std::span<const TokenInput> Scheduler::plan_step() {
  batch_.clear();
  entries_.clear();
  uint32_t budget = options_.max_step_tokens;
  for (const auto& seq : active_) {
    if (seq->finished() || !seq->decoding() || budget == 0) continue;
    const uint32_t pos = seq->n_cached();
    entries_.push_back({seq.get(), pos, 1, true});
    batch_.push_back({seq->token_at(pos), pos, seq->slot(), true});
    --budget;
  }
  for (const auto& seq : active_) {
    if (budget == 0) break;
    if (seq->finished() || seq->decoding() || !ready_to_prefill(*seq)) continue;
    const uint32_t count = std::min({options_.prefill_chunk, seq->prompt_left(), budget});
    const uint32_t first = seq->n_cached();
    const bool logits = count == seq->prompt_left();
    entries_.push_back({seq.get(), first, count, logits});
    for (uint32_t pos = first; pos < first + count; ++pos)
      batch_.push_back({seq->token_at(pos), pos, seq->slot(), logits && pos + 1 == first + count});
    budget -= count;
  }
  for (const StepEntry& e : entries_) {
    Slot& slot = slots_[e.sequence->slot()];
    for (uint32_t pos = e.first_pos; pos < e.first_pos + e.count; ++pos)
      if (pos == e.first_pos || pos % kKvBlockPositions == 0)
        block_for_write(slot, pos / kKvBlockPositions, pos % kKvBlockPositions);
  }
  for (uint32_t s = 0; s < n_slots(); ++s) {
    if (!slots_[s].table_changed) continue;
    forward_.set_block_table(s, slots_[s].table);
    slots_[s].table_changed = false;
  }
  note_usage();
  return batch_;
}

// The block a sequence writes position `pos_in_block` of table entry
// `index` into: a new one past its table, else its own (copied first when
// another holds it or the trie knows it).
uint32_t Scheduler::block_for_write(Slot& slot, uint32_t index, uint32_t pos_in_block) {
  if (index > slot.table.size()) throw std::logic_error("KV blocks: a position written past its block table's end");
  if (index == slot.table.size()) {
    if (slot.reserved > 0) {
      slot.table.push_back(pool_.take_reserved());
      --slot.reserved;
    } else {
      slot.table.push_back(pool_.take_unreserved());
    }
    slot.table_changed = true;
    return slot.table.back();
  }
  uint32_t& block = slot.table[index];
  const uint32_t own = pool_.writable(block);
  if (own != block) {
    forward_.copy_kv_block(block, own, pos_in_block);
    pool_.release(block);
    block = own;
    slot.table_changed = true;
  }
  return block;
}

void Scheduler::commit_step() {
  for (const StepEntry& e : entries_) {
    const uint32_t before = e.sequence->n_cached();
    e.sequence->advance(e.count);
    if (options_.prefix_cache) cache_full_blocks(*e.sequence, before, before + e.count);
  }
}

// The blocks that positions [from_pos, to_pos) filled enter the trie; one
// that a cached block already holds gives way to it.
void Scheduler::cache_full_blocks(const Sequence& seq, uint32_t from_pos, uint32_t to_pos) {
  Slot& slot = slots_[seq.slot()];
  std::vector<int32_t> tokens(kKvBlockPositions);
  for (uint32_t i = from_pos / kKvBlockPositions; (i + 1) * kKvBlockPositions <= to_pos; ++i) {
    const uint32_t block = slot.table[i];
    if (pool_.cached(block)) continue;
    for (uint32_t k = 0; k < kKvBlockPositions; ++k) tokens[k] = seq.token_at(i * kKvBlockPositions + k);
    const uint32_t twin = pool_.insert(i == 0 ? kNoBlock : slot.table[i - 1], block, tokens);
    if (twin == kNoBlock || pool_.holders(block) != 1) continue;
    pool_.release(block);
    pool_.hold(twin);
    slot.table[i] = twin;
    slot.table_changed = true;
  }
}

void Scheduler::fail_step(const std::string& message) {
  // Positions past each sequence's n_cached() may hold anything: nothing reads them.
  for (const StepEntry& e : entries_) e.sequence->finish(FinishReason::Error, message);
  entries_.clear();
  batch_.clear();
}

bool Scheduler::cancel(Engine::RequestId id) {
  for (const auto& seq : active_) {
    if (seq->id() != id) continue;
    seq->finish(FinishReason::Cancelled);
    return true;
  }
  return false;
}

void Scheduler::finish_all(FinishReason reason, const std::string& error) {
  for (const auto& seq : active_) seq->finish(reason, error);
}

std::vector<std::unique_ptr<Sequence>> Scheduler::take_finished() {
  std::vector<std::unique_ptr<Sequence>> done;
  std::vector<std::unique_ptr<Sequence>> running;
  running.reserve(slots_.size());
  for (auto& seq : active_) {
    if (!seq->finished()) {
      running.push_back(std::move(seq));
      continue;
    }
    release_slot(seq->slot(), seq.get());
    done.push_back(std::move(seq));
  }
  active_ = std::move(running);
  return done;
}

// A finished sequence's last, partly filled block enters the trie; then
// its blocks are let go, the last first, so the cache evicts from the end.
void Scheduler::release_slot(uint32_t s, const Sequence* seq) {
  Slot& slot = slots_[s];
  const uint32_t n = seq != nullptr && !slot.leader ? seq->n_cached() : 0;
  const uint32_t last = n / kKvBlockPositions;
  if (options_.prefix_cache && n % kKvBlockPositions != 0 && last < slot.table.size() &&
      !pool_.cached(slot.table[last]) && pool_.holders(slot.table[last]) == 1) {
    std::vector<int32_t> tokens;
    for (uint32_t pos = last * kKvBlockPositions; pos < n; ++pos) tokens.push_back(seq->token_at(pos));
    pool_.insert(last == 0 ? kNoBlock : slot.table[last - 1], slot.table[last], tokens);
  }
  for (auto it = slot.table.rbegin(); it != slot.table.rend(); ++it) pool_.release(*it);
  pool_.unreserve(slot.reserved);
  slot = Slot{};
}

std::optional<uint32_t> Scheduler::lend_slot(uint32_t n_pos) {
  if (free_slots() == 0) return std::nullopt;
  const uint32_t need = kv_blocks_for(n_pos);
  if (!pool_.reserve(need)) return std::nullopt;
  uint32_t s = 0;
  while (slots_[s].busy) ++s;
  Slot& slot = slots_[s];
  slot = Slot{};
  slot.busy = true;
  ++n_lent_;
  for (uint32_t i = 0; i < need; ++i) slot.table.push_back(pool_.take_reserved());
  forward_.set_block_table(s, slot.table);
  note_usage();
  return s;
}

void Scheduler::return_slot(uint32_t slot) {
  release_slot(slot, nullptr);
  --n_lent_;
}

uint64_t Scheduler::kv_tokens_used() const {
  uint64_t used = 0;
  for (const auto& seq : active_) used += seq->n_cached();
  return used;
}

void Scheduler::note_usage() { peak_in_use_ = std::max(peak_in_use_, pool_.n_in_use()); }

}  // namespace lamina::model::engine
