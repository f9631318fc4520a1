// Prompt sharing between running requests: a request whose prompt starts
// like one another slot is computing (n > 1 samples of one prompt, or any two
// requests sent together) waits until those positions are in the other
// slot's cache and copies them. At least its last prompt token is computed
// in its own slot, for its logits; the batch-invariant forward pass gives
// the copied positions the same bits computing them would.
#include <algorithm>

#include "engine/scheduler.h"

namespace lamina::model::engine {

std::optional<Scheduler::Follow> Scheduler::find_leader(std::span<const int32_t> prompt, uint32_t own_slot,
                                                        std::size_t reuse) const {
  if (!can_copy_slots_ || prompt.size() < 2) return std::nullopt;
  std::optional<Follow> best;
  std::size_t best_length = reuse;
  for (const auto& seq : active_) {
    if (seq->finished() || seq->slot() == own_slot) continue;
    const std::size_t length =
        std::min(common_prefix(seq->request().prompt_ids, prompt), prompt.size() - 1);
    if (length <= best_length) continue;
    best_length = length;
    best = Follow{seq->slot(), seq->id(), static_cast<uint32_t>(length)};
  }
  return best;
}

bool Scheduler::ready_to_prefill(Sequence& seq) {
  std::optional<Follow>& follow = follows_[seq.slot()];
  if (!follow) return true;
  const Slot& leader_slot = slots_[follow->slot];
  const std::vector<int32_t>& prompt = seq.request().prompt_ids;
  if (common_prefix(leader_slot.tokens, prompt) >= follow->length) {
    copies_.push_back({follow->slot, seq.slot(), follow->length});
    Slot& own = slots_[seq.slot()];
    own.tokens.assign(prompt.begin(), prompt.begin() + follow->length);
    seq.adopt_prefix(follow->length);
    follow.reset();
    return true;
  }
  const bool leader_runs = std::any_of(active_.begin(), active_.end(), [&](const auto& s) {
    return s->id() == follow->leader && !s->finished();
  });
  if (leader_runs) return false;
  follow.reset();  // the leader ended early: compute the prompt here
  return true;
}

}  // namespace lamina::model::engine
