#include "engine/sequence.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>

namespace lamina::model::engine {
namespace {

double ms_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

}  // namespace

void check_request(const CompletionRequest& request, uint32_t n_ctx, uint32_t n_vocab) {
  if (request.prompt_ids.empty()) throw std::invalid_argument("the prompt has no tokens");
  if (request.prompt_ids.size() >= n_ctx)
    throw std::invalid_argument("the prompt has " + std::to_string(request.prompt_ids.size()) +
                                " tokens; the context holds " + std::to_string(n_ctx) + " (ForwardOptions::n_ctx)");
  for (std::size_t i = 0; i < request.prompt_ids.size(); ++i) {
    const int32_t id = request.prompt_ids[i];
    if (id < 0 || static_cast<uint32_t>(id) >= n_vocab)
      throw std::invalid_argument("prompt token " + std::to_string(i) + " has id " + std::to_string(id) +
                                  ", outside the vocabulary (" + std::to_string(n_vocab) + ")");
  }
  if (request.constraint && request.constraint->n_vocab() != static_cast<int32_t>(n_vocab))
    throw std::invalid_argument("the grammar constraint was built for " + std::to_string(request.constraint->n_vocab()) +
                                " tokens; the model has " + std::to_string(n_vocab));
  for (const TokenBias& b : request.sampling.logit_bias) {
    if (b.id < 0 || static_cast<uint32_t>(b.id) >= n_vocab)
      throw std::invalid_argument("logit_bias names token " + std::to_string(b.id) + ", outside the vocabulary (" +
                                  std::to_string(n_vocab) + ")");
    if (!(std::abs(b.bias) <= kMaxLogitBias))
      throw std::invalid_argument("logit_bias of token " + std::to_string(b.id) + " is " + std::to_string(b.bias) +
                                  "; it must be from -100 to 100");
  }
  if (request.top_logprobs > kMaxTopLogprobs)
    throw std::invalid_argument("top_logprobs is " + std::to_string(request.top_logprobs) + "; at most " +
                                std::to_string(kMaxTopLogprobs));
}

Sequence::Sequence(Engine::RequestId id, CompletionRequest request, CompletionCallbacks callbacks,
                   Clock::time_point submitted)
    : id_(id),
      request_(std::move(request)),
      callbacks_(std::move(callbacks)),
      sampler_(request_.sampling),
      submitted_(submitted) {
  // The penalties see the prompt, as in the generation loop.
  for (int32_t token : request_.prompt_ids) sampler_.accept(token);
  if (request_.constraint) matcher_.emplace(request_.constraint);
}

void Sequence::admit(uint32_t slot, uint32_t cached, Clock::time_point now) {
  slot_ = slot;
  cached_prompt_ = cached;
  n_fed_ = cached;
  queue_ms_ = ms_between(submitted_, now);
  admitted_ = true;
  if (request_.max_tokens == 0) finish(FinishReason::Length);
}

int32_t Sequence::token_at(uint32_t pos) const {
  return pos < prompt_size() ? request_.prompt_ids[pos] : generated_.at(pos - prompt_size());
}

void Sequence::on_logits(std::span<float> logits, const Tokenizer& tokenizer, uint32_t n_ctx) {
  if (matcher_ && matcher_->mask_logits(logits) == 0) {
    finish(FinishReason::Error, "no token of the vocabulary continues the grammar here");
    return;
  }
  take(sampler_.sample(logits), logits, tokenizer, n_ctx);
}

void Sequence::on_argmax(int32_t id, const Tokenizer& tokenizer, uint32_t n_ctx) {
  take(id, {}, tokenizer, n_ctx);
}

void Sequence::take(int32_t id, std::span<const float> logits, const Tokenizer& tokenizer, uint32_t n_ctx) {
  if (!text_gen_) text_gen_.emplace(tokenizer, request_.prompt_ids, request_.skip_special_tokens, request_.stop);
  // Ends for `reason` unless the text held back completes a stop string.
  auto end = [&](FinishReason reason) { finish(text_gen_->finish(text_) ? FinishReason::StopString : reason); };
  if (request_.stop_at_eog && tokenizer.is_eog(id)) {
    end(FinishReason::EndOfGeneration);
    return;
  }
  if (generated_.empty()) first_token_ms_ = ms_between(submitted_, Clock::now());
  TokenEvent event;
  event.id = id;
  event.chosen.id = id;
  if (request_.top_logprobs >= 0 && !logits.empty()) fill_logprobs(logits, id, event);
  if (matcher_ && !matcher_->accept(id)) {
    finish(FinishReason::Error, "token " + std::to_string(id) + " does not continue the grammar");
    return;
  }
  generated_.push_back(id);
  sampler_.accept(id);
  if (text_gen_->append(id, text_)) {
    finish(FinishReason::StopString);
  } else if (matcher_ && matcher_->must_end()) {
    // Only an end token could follow: end now rather than decode it.
    end(FinishReason::EndOfGeneration);
  } else if (request_.max_tokens >= 0 && generated_.size() >= static_cast<std::size_t>(request_.max_tokens)) {
    end(FinishReason::Length);
  } else if (n_fed_ >= n_ctx) {
    // The new token would need a position past the end of the slot.
    end(FinishReason::ContextFull);
  }
  emit(event, finish_.has_value());
}

// Log-softmax of the logits as the sampler saw them (after the penalties,
// before the temperature).
void Sequence::fill_logprobs(std::span<const float> logits, int32_t chosen, TokenEvent& event) {
  const float max_logit = *std::max_element(logits.begin(), logits.end());
  double sum = 0.0;
  for (float v : logits) sum += std::exp(static_cast<double>(v) - max_logit);
  const double log_norm = max_logit + std::log(sum);
  auto logprob = [&](int32_t id) {
    return static_cast<float>(static_cast<double>(logits[static_cast<std::size_t>(id)]) - log_norm);
  };
  event.chosen = {chosen, logprob(chosen)};

  const auto n_top = std::min<std::size_t>(static_cast<std::size_t>(request_.top_logprobs), logits.size());
  if (n_top == 0) return;
  order_.resize(logits.size());
  std::iota(order_.begin(), order_.end(), 0);
  // Most likely first; ties by id so the list never depends on the sort.
  std::partial_sort(order_.begin(), order_.begin() + static_cast<std::ptrdiff_t>(n_top), order_.end(),
                    [&](int32_t a, int32_t b) {
                      const float la = logits[static_cast<std::size_t>(a)], lb = logits[static_cast<std::size_t>(b)];
                      return la > lb || (la == lb && a < b);
                    });
  event.top.reserve(n_top);
  for (std::size_t i = 0; i < n_top; ++i) {
    // Tokens a grammar ruled out (-infinity) are no alternatives.
    if (std::isinf(logits[static_cast<std::size_t>(order_[i])])) break;
    event.top.push_back({order_[i], logprob(order_[i])});
  }
}

// Sends the token with the text that became safe to show; the last token of
// a request carries everything still held back.
void Sequence::emit(TokenEvent& event, bool last) {
  const std::size_t safe = last || !text_gen_ ? text_.size() : text_gen_->safe_length(text_);
  if (safe > shown_) {
    event.text = text_.substr(shown_, safe - shown_);
    shown_ = safe;
  }
  if (!callbacks_.on_token) return;
  try {
    if (!callbacks_.on_token(event)) finish(FinishReason::Cancelled);
  } catch (const std::exception& e) {
    finish(FinishReason::Error, std::string("on_token failed: ") + e.what());
  } catch (...) {
    finish(FinishReason::Error, "on_token failed");
  }
}

void Sequence::finish(FinishReason reason, std::string error) {
  if (finish_) return;
  finish_ = reason;
  error_ = std::move(error);
}

void Sequence::report() {
  if (reported_) return;
  reported_ = true;
  const auto now = Clock::now();
  CompletionResult result;
  result.finish = finish_.value_or(FinishReason::Cancelled);
  result.error = error_;
  result.generated_ids = generated_;
  result.text = text_;
  result.text_tail = text_.substr(std::min(shown_, text_.size()));
  result.prompt_tokens = prompt_size();
  result.cached_prompt_tokens = cached_prompt_;
  result.queue_ms = admitted_ ? queue_ms_ : ms_between(submitted_, now);
  result.first_token_ms = first_token_ms_;
  if (!callbacks_.on_done) return;
  try {
    callbacks_.on_done(result);
  } catch (...) {
    // The request is over either way; the engine thread must go on.
  }
}

}  // namespace lamina::model::engine

namespace lamina::model {

std::string_view finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::EndOfGeneration: return "eog";
    case FinishReason::StopString: return "stop";
    case FinishReason::Length: return "length";
    case FinishReason::ContextFull: return "context";
    case FinishReason::Cancelled: return "cancelled";
    case FinishReason::Error: return "error";
  }
  return "?";
}

}  // namespace lamina::model
