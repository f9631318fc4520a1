// The engine's sequence slots, their KV blocks and the batch of each forward
// step. Lives on the engine thread only.
//
// Memory: the KV cache is a pool of blocks (KvBlockPool, kv_blocks.h) that
// the slots reach through their block tables; a slot holds blocks only
// while a request runs in it, so idle slots cost nothing. A request is
// admitted when the pool can give it its worst case (prompt plus
// min(max_tokens, context) positions, blocks it shares with running
// requests counted once; cached idle blocks count as free), so a running
// request never finds the pool empty; the others wait in the queue.
//
// Reuse: a new prompt takes, by reference, the whole blocks that hold its
// leading tokens (the trie of cached blocks when the prefix cache is on, and
// the blocks of running requests), and copies the leading positions of the
// block that matches only partly into a block of its own; at least its last
// token is computed, for its logits. A request whose prompt starts like one
// still being computed (n > 1 samples of a prompt, or requests sent
// together) waits for those positions, then takes them. Batch invariance
// makes every reused position bit-identical to computing it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/kv_blocks.h"
#include "engine/sequence.h"
#include "lamina/model/engine.h"
#include "lamina/model/forward.h"

namespace lamina::model::engine {

// How many leading tokens `a` and `b` share.
std::size_t common_prefix(std::span<const int32_t> a, std::span<const int32_t> b);

// Blocks a request may hold at most: its prompt and max_tokens more
// positions (all of the context for max_tokens < 0), within `n_ctx`.
uint32_t worst_case_blocks(const CompletionRequest& request, uint32_t n_ctx);

// A run of consecutive positions of one sequence in a step's batch.
struct StepEntry {
  Sequence* sequence = nullptr;
  uint32_t first_pos = 0;
  uint32_t count = 0;
  bool logits = false;  // the last position's logits are sampled
};

class Scheduler {
 public:
  // The pool is the forward pass's kv_blocks(); the scheduler sets its block tables.
  Scheduler(Forward& forward, const EngineOptions& options);

  uint32_t n_slots() const { return static_cast<uint32_t>(slots_.size()); }
  uint32_t free_slots() const;
  bool idle() const { return active_.empty(); }

  // Keeps back the KV blocks `sequence` may need before it is admitted
  // (next, in the order of these calls); false when the pool cannot give
  // them now (nothing is kept).
  bool reserve_for(const Sequence& sequence);
  // Puts a request, reserved for, into a free slot with the blocks it can
  // reuse (or as a follower of a running request whose prompt it shares).
  const Sequence& admit(std::unique_ptr<Sequence> sequence, Clock::time_point now);

  // Builds the next step: one token of every decoding sequence first, so
  // they never wait behind prompts, then prompt chunks in admission order
  // (at most prefill_chunk per sequence, max_step_tokens in all). The slots'
  // block tables cover the step's positions.
  std::span<const TokenInput> plan_step();
  const std::vector<StepEntry>& step_entries() const { return entries_; }
  // The planned step ran: its positions are in the cache (full blocks enter the trie).
  void commit_step();
  // The planned step failed: its sequences end with `message`.
  void fail_step(const std::string& message);

  // Marks a running request as cancelled; false when it is not running here.
  bool cancel(Engine::RequestId id);
  // Ends every running request with `reason`.
  void finish_all(FinishReason reason, const std::string& error = {});
  // Frees the slots and blocks of the requests that ended and hands them over.
  std::vector<std::unique_ptr<Sequence>> take_finished();

  // A free slot with blocks of its own for positions [0, n_pos), for work
  // outside the requests (embeddings); none when no slot or not enough
  // blocks are free. Give it back with return_slot.
  std::optional<uint32_t> lend_slot(uint32_t n_pos);
  void return_slot(uint32_t slot);

  uint32_t n_active() const { return static_cast<uint32_t>(active_.size()); }
  uint64_t kv_tokens_used() const;
  const KvBlockPool& blocks() const { return pool_; }
  uint32_t peak_blocks_in_use() const { return peak_in_use_; }
  // Prompt positions reused rather than computed, over all requests.
  uint64_t cached_prompt_total() const { return cached_prompt_total_; }

 private:
  struct Slot {
    bool busy = false;  // a request or a lent job
    std::vector<uint32_t> table;
    uint32_t reserved = 0;  // blocks it may still take
    bool table_changed = false;
    // Waiting for request `leader` to compute its first `length` positions.
    std::optional<Engine::RequestId> leader;
    uint32_t follow_length = 0;
  };
  struct Pending {
    const Sequence* sequence = nullptr;
    uint32_t reserved = 0;
    bool follows = false;
  };

  // In scheduler_sharing.cc: what a prompt can reuse now, and what it costs the pool.
  BlockMatch best_match(std::span<const int32_t> prompt) const;
  uint32_t match_cost(const BlockMatch& m, uint32_t worst_case) const;
  // A running request (or, with `pending`, one reserved for before
  // `follower`) whose prompt shares more than `matched` leading tokens with
  // the follower's and has not computed them yet; `length`: how many.
  const Sequence* leader_for(const Sequence& follower, std::size_t matched, bool pending, std::size_t& length) const;
  // Holds the matched blocks, copies the partial one, and keeps back the
  // rest of `worst_case` for `slot`, out of `budget` reserved blocks.
  uint32_t take_match(uint32_t slot, std::span<const int32_t> prompt, uint32_t worst_case, uint32_t budget);
  // Before planning: a follower whose leader went far enough (or away) takes its blocks.
  bool ready_to_prefill(Sequence& seq);

  uint32_t block_for_write(Slot& slot, uint32_t index, uint32_t pos_in_block);
  void cache_full_blocks(const Sequence& seq, uint32_t from_pos, uint32_t to_pos);
  void release_slot(uint32_t slot, const Sequence* seq);
  void note_usage();

  Forward& forward_;
  EngineOptions options_;
  uint32_t n_ctx_;
  KvBlockPool pool_;
  std::vector<Slot> slots_;
  std::vector<Pending> pending_;
  std::vector<std::unique_ptr<Sequence>> active_;  // admission order
  std::vector<TokenInput> batch_;
  std::vector<StepEntry> entries_;
  uint32_t n_lent_ = 0;
  uint32_t peak_in_use_ = 0;
  uint64_t cached_prompt_total_ = 0;
};

}  // namespace lamina::model::engine
