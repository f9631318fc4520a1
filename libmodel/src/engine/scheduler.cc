#include "engine/scheduler.h"

#include <algorithm>
#include <utility>

namespace lamina::model::engine {

std::size_t common_prefix(std::span<const int32_t> a, std::span<const int32_t> b) {
  const std::size_t n = std::min(a.size(), b.size());
  std::size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

Scheduler::Scheduler(uint32_t n_slots, const EngineOptions& options, bool can_copy_slots)
    : options_(options), can_copy_slots_(can_copy_slots), follows_(n_slots), slots_(n_slots) {
  active_.reserve(n_slots);
}

const Sequence& Scheduler::admit(std::unique_ptr<Sequence> sequence, Clock::time_point now) {
  const std::vector<int32_t>& prompt = sequence->request().prompt_ids;
  std::size_t best = slots_.size();
  std::size_t best_reuse = 0;
  for (std::size_t s = 0; s < slots_.size(); ++s) {
    const Slot& slot = slots_[s];
    if (slot.busy) continue;
    const std::size_t reuse = options_.prefix_cache ? std::min(common_prefix(slot.tokens, prompt), prompt.size() - 1) : 0;
    if (best == slots_.size() || reuse > best_reuse ||
        (reuse == best_reuse && slot.released_at < slots_[best].released_at)) {
      best = s;
      best_reuse = reuse;
    }
  }
  Slot& slot = slots_.at(best);
  slot.busy = true;
  // Positions past the reused prefix are overwritten; attention reads only
  // a sequence's positions up to the current one.
  slot.tokens.resize(best_reuse);
  follows_[best] = find_leader(prompt, static_cast<uint32_t>(best), best_reuse);
  sequence->admit(static_cast<uint32_t>(best), static_cast<uint32_t>(best_reuse), now);
  active_.push_back(std::move(sequence));
  return *active_.back();
}

std::span<const TokenInput> Scheduler::plan_step() {
  batch_.clear();
  entries_.clear();
  copies_.clear();
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
  return batch_;
}

void Scheduler::commit_step() {
  for (const StepEntry& e : entries_) {
    Slot& slot = slots_[e.sequence->slot()];
    slot.tokens.resize(e.first_pos);
    for (uint32_t pos = e.first_pos; pos < e.first_pos + e.count; ++pos)
      slot.tokens.push_back(e.sequence->token_at(pos));
    e.sequence->advance(e.count);
  }
}

void Scheduler::fail_step(const std::string& message) {
  for (const SlotCopy& c : copies_) slots_[c.dst].tokens.clear();
  copies_.clear();
  for (const StepEntry& e : entries_) {
    std::vector<int32_t>& tokens = slots_[e.sequence->slot()].tokens;
    tokens.resize(std::min<std::size_t>(tokens.size(), e.first_pos));
    e.sequence->finish(FinishReason::Error, message);
  }
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
    Slot& slot = slots_[seq->slot()];
    slot.busy = false;
    follows_[seq->slot()].reset();
    slot.released_at = ++releases_;
    done.push_back(std::move(seq));
  }
  active_ = std::move(running);
  return done;
}

std::vector<uint32_t> Scheduler::free_slot_ids(uint32_t max) const {
  std::vector<uint32_t> ids;
  for (uint32_t s = 0; s < n_slots(); ++s)
    if (!slots_[s].busy) ids.push_back(s);
  std::sort(ids.begin(), ids.end(), [&](uint32_t a, uint32_t b) { return slots_[a].released_at < slots_[b].released_at; });
  if (ids.size() > max) ids.resize(max);
  return ids;
}

void Scheduler::slot_holds(uint32_t slot, std::span<const int32_t> tokens) {
  Slot& s = slots_.at(slot);
  s.tokens.assign(tokens.begin(), tokens.end());
  s.released_at = ++releases_;
}

uint64_t Scheduler::kv_tokens_used() const {
  uint64_t used = 0;
  for (const auto& seq : active_) used += seq->n_cached();
  return used;
}

}  // namespace lamina::model::engine
