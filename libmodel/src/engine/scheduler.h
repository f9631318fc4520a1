// The engine's sequence slots and the batch of each forward step. Each slot
// remembers which tokens its KV cache holds, so a new request can start
// after the longest prefix it shares with a free slot (the prefix cache).
// Lives on the engine thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "engine/sequence.h"
#include "lamina/model/engine.h"
#include "lamina/model/forward.h"

namespace lamina::model::engine {

// How many leading tokens `a` and `b` share.
std::size_t common_prefix(std::span<const int32_t> a, std::span<const int32_t> b);

// A run of consecutive positions of one sequence in a step's batch.
struct StepEntry {
  Sequence* sequence = nullptr;
  uint32_t first_pos = 0;
  uint32_t count = 0;
  bool logits = false;  // the last position's logits are sampled
};

// Positions [0, n_pos) of slot `src` to copy into slot `dst` before the step
// runs (Forward::copy_sequence).
struct SlotCopy {
  uint32_t src = 0;
  uint32_t dst = 0;
  uint32_t n_pos = 0;
};

class Scheduler {
 public:
  // `can_copy_slots`: the forward pass copies one slot's positions into
  // another (Forward::copy_sequence), so a request whose prompt starts like
  // one being computed waits for it and copies its positions instead of
  // computing them again (n > 1 samples of a prompt share its prefill).
  Scheduler(uint32_t n_slots, const EngineOptions& options, bool can_copy_slots = false);

  uint32_t n_slots() const { return static_cast<uint32_t>(slots_.size()); }
  uint32_t free_slots() const { return n_slots() - static_cast<uint32_t>(active_.size()); }
  bool idle() const { return active_.empty(); }

  // Puts a request into a free slot (there must be one): the slot whose
  // cached tokens share the longest prefix with the prompt, else the one
  // free the longest. At least the last prompt token is always recomputed,
  // for its logits.
  const Sequence& admit(std::unique_ptr<Sequence> sequence, Clock::time_point now);

  // Builds the next step: one token of every decoding sequence first, so
  // they never wait behind prompts, then prompt chunks in admission order
  // (at most prefill_chunk per sequence, max_step_tokens in all).
  std::span<const TokenInput> plan_step();
  const std::vector<StepEntry>& step_entries() const { return entries_; }
  // The copies the planned step needs first, in order.
  const std::vector<SlotCopy>& step_copies() const { return copies_; }
  // The planned step ran: its positions are in the cache.
  void commit_step();
  // The planned step failed: its sequences end with `message`, and their
  // slots forget the positions it may have written.
  void fail_step(const std::string& message);

  // Marks a running request as cancelled; false when it is not running here.
  bool cancel(Engine::RequestId id);
  // Ends every running request with `reason`.
  void finish_all(FinishReason reason, const std::string& error = {});
  // Frees the slots of the requests that ended and hands them over.
  std::vector<std::unique_ptr<Sequence>> take_finished();

  // Free slots for work outside the requests (embeddings), least recently
  // used first, at most `max`. The caller records what each then holds.
  std::vector<uint32_t> free_slot_ids(uint32_t max) const;
  // A free slot's cache now holds `tokens` from position 0 (nothing else).
  void slot_holds(uint32_t slot, std::span<const int32_t> tokens);

  uint32_t n_active() const { return static_cast<uint32_t>(active_.size()); }
  uint64_t kv_tokens_used() const;

 private:
  struct Slot {
    std::vector<int32_t> tokens;  // what positions 0.. of the slot's cache hold
    bool busy = false;
    uint64_t released_at = 0;     // order of release, for least-recently-used choice
  };

  // A running request waits for the one in slot `slot` (request `leader`)
  // to compute its first `length` prompt positions, then copies them.
  struct Follow {
    uint32_t slot = 0;
    Engine::RequestId leader = 0;
    uint32_t length = 0;
  };

  // The request in another busy slot whose prompt shares the most (more than
  // `reuse`) with `prompt`, at most all but its last token; in scheduler_sharing.cc.
  std::optional<Follow> find_leader(std::span<const int32_t> prompt, uint32_t own_slot, std::size_t reuse) const;
  // Before planning: copies for the followers whose leaders are far enough,
  // and gives up waiting where the leader went away. False while `seq` waits.
  bool ready_to_prefill(Sequence& seq);

  EngineOptions options_;
  bool can_copy_slots_ = false;
  std::vector<std::optional<Follow>> follows_;  // by slot
  std::vector<SlotCopy> copies_;
  std::vector<Slot> slots_;
  std::vector<std::unique_ptr<Sequence>> active_;  // admission order
  std::vector<TokenInput> batch_;
  std::vector<StepEntry> entries_;
  uint64_t releases_ = 0;
};

}  // namespace lamina::model::engine
