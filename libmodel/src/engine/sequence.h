// One request: its tokens and KV positions, its own seeded sampler, the
// stop-string filter for its streamed text, why it ends, and the result it
// reports. The Engine runs many on its thread; generate() runs one on the
// caller's. Not shared between threads.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lamina/model/engine.h"
#include "lamina/model/grammar.h"
#include "lamina/model/sampler.h"
#include "lamina/model/tokenizer.h"
#include "generated_text.h"

namespace lamina::model::engine {

using Clock = std::chrono::steady_clock;

// Throws std::invalid_argument for a request that can never run in a context of
// `n_ctx` positions with `n_vocab` token ids: an empty prompt, one not shorter
// than the context, an id outside the vocabulary, too many top log-probabilities.
void check_request(const CompletionRequest& request, uint32_t n_ctx, uint32_t n_vocab);

class Sequence {
 public:
  Sequence(Engine::RequestId id, CompletionRequest request, CompletionCallbacks callbacks, Clock::time_point submitted);

  Engine::RequestId id() const { return id_; }
  const CompletionRequest& request() const { return request_; }
  uint32_t prompt_size() const { return static_cast<uint32_t>(request_.prompt_ids.size()); }

  // Takes KV slot `slot`, whose first `cached` positions already hold this
  // prompt's tokens. A request for no tokens ends here (Length).
  void admit(uint32_t slot, uint32_t cached, Clock::time_point now);
  uint32_t slot() const { return slot_; }
  uint32_t cached_prompt() const { return cached_prompt_; }

  // Positions whose keys and values are in the cache.
  uint32_t n_cached() const { return n_fed_; }
  // Prompt tokens not yet through the forward pass.
  uint32_t prompt_left() const { return prompt_size() - std::min(n_fed_, prompt_size()); }
  bool decoding() const { return prompt_left() == 0; }
  // The token at a position of this sequence (prompt, then generated).
  int32_t token_at(uint32_t pos) const;
  // The forward pass has stored `count` more positions.
  void advance(uint32_t count) { n_fed_ += count; }
  // The slot's first `n` positions (at least n_cached()) were taken from
  // another sequence with the same prompt tokens: they count as cached.
  void adopt_prefix(uint32_t n) { n_fed_ = cached_prompt_ = n; }

  // Samples from the logits of the last position fed (`logits` is scratch:
  // the penalties change it), streams the token and decides whether the
  // request ends. `n_ctx` is the slot's capacity.
  void on_logits(std::span<float> logits, const Tokenizer& tokenizer, uint32_t n_ctx);
  // True when the next token is the plain argmax and no log-probabilities
  // are wanted: the forward pass may pick it (decode_greedy) and on_argmax
  // takes it instead of on_logits.
  bool needs_only_argmax() const { return sampler_.picks_argmax() && request_.top_logprobs < 0 && !matcher_; }
  void on_argmax(int32_t id, const Tokenizer& tokenizer, uint32_t n_ctx);

  // Ends the request (the first reason given wins); on_done runs in report().
  void finish(FinishReason reason, std::string error = {});
  std::optional<FinishReason> finished() const { return finish_; }
  // Calls on_done with the result; once.
  void report();

  uint32_t n_generated() const { return static_cast<uint32_t>(generated_.size()); }

 private:
  // Streams token `id`; `logits` (empty when not on the host) feed the log-probabilities.
  void take(int32_t id, std::span<const float> logits, const Tokenizer& tokenizer, uint32_t n_ctx);
  void fill_logprobs(std::span<const float> logits, int32_t chosen, TokenEvent& event);
  void emit(TokenEvent& event, bool last);

  Engine::RequestId id_;
  CompletionRequest request_;
  CompletionCallbacks callbacks_;
  Sampler sampler_;
  std::optional<GrammarMatcher> matcher_;  // when the request has a constraint
  std::optional<GeneratedText> text_gen_;  // made with the tokenizer at the first token
  Clock::time_point submitted_;

  uint32_t slot_ = 0;
  uint32_t cached_prompt_ = 0;
  uint32_t n_fed_ = 0;
  std::vector<int32_t> generated_;
  std::string text_;      // generated text, cut before a completed stop string
  std::size_t shown_ = 0; // bytes of text_ already sent with a TokenEvent
  double queue_ms_ = 0.0;
  double first_token_ms_ = 0.0;
  std::optional<FinishReason> finish_;
  std::string error_;
  bool admitted_ = false;
  bool reported_ = false;
  std::vector<int32_t> order_;  // scratch for the top log-probabilities
};

}  // namespace lamina::model::engine
