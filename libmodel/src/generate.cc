#include "lamina/model/generate.h"

#include <chrono>
#include <exception>
#include <stdexcept>
#include <string>
#include <utility>

#include "engine/sequence.h"
#include "engine/step.h"

namespace lamina::model {
namespace {

using engine::Clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// The request the Engine would run for the same generation.
CompletionRequest as_request(const std::vector<int32_t>& prompt_ids, const GenerateOptions& o) {
  return {.prompt_ids = prompt_ids, .max_tokens = o.n_predict, .sampling = o.sampling, .stop = o.stop,
          .stop_at_eog = o.stop_at_eog, .skip_special_tokens = o.skip_special_tokens, .top_logprobs = -1, .constraint = o.constraint};
}

}  // namespace

GenerateResult generate(const Model& model, Forward& forward, const std::vector<int32_t>& prompt_ids,
                        const GenerateOptions& options, const TextCallback& on_text) {
  const uint32_t n_ctx = forward.n_ctx();
  const uint32_t n_vocab = forward.config().n_vocab;
  CompletionRequest request = as_request(prompt_ids, options);
  engine::check_request(request, n_ctx, n_vocab);
  if (options.seq >= forward.n_seq())
    throw std::invalid_argument("the sequence slot (seq) is " + std::to_string(options.seq) + "; the forward pass has " +
                                std::to_string(forward.n_seq()));

  // The request's text streams through on_text; what on_text throws ends the
  // generation and is thrown again here.
  std::exception_ptr text_failure;
  CompletionResult done;
  CompletionCallbacks callbacks;
  if (on_text) {
    callbacks.on_token = [&](const TokenEvent& event) {
      try {
        if (!event.text.empty()) on_text(event.text);
        return true;
      } catch (...) {
        text_failure = std::current_exception();
        return false;
      }
    };
  }
  callbacks.on_done = [&](const CompletionResult& r) { done = r; };
  engine::Sequence seq(0, std::move(request), std::move(callbacks), Clock::now());
  seq.admit(options.seq, 0, Clock::now());

  GenerateResult result;
  result.prompt_ids = prompt_ids;
  const Tokenizer& tokenizer = model.tokenizer();
  engine::StepSampling sampling(n_vocab);
  engine::Sequence* const samplers[] = {&seq};
  std::vector<TokenInput> batch(prompt_ids.size());
  for (std::size_t i = 0; i < prompt_ids.size(); ++i) {
    batch[i] = {prompt_ids[i], static_cast<uint32_t>(i), options.seq,
                options.want_prompt_logits || i + 1 == prompt_ids.size()};
  }
  // The whole prompt is one step (the engine cuts it into chunks; the forward
  // pass gives the same bits either way).
  const auto prompt_start = Clock::now();
  if (options.want_prompt_logits) {
    const std::span<const float> logits = forward.decode(batch);
    result.prompt_ms = ms_since(prompt_start);
    result.prompt_logits.assign(logits.begin(), logits.end());
    seq.advance(static_cast<uint32_t>(batch.size()));
    std::vector<float> last(logits.end() - n_vocab, logits.end());
    if (!seq.finished()) seq.on_logits(last, tokenizer, n_ctx);
  } else if (!seq.finished()) {
    sampling.run(forward, batch, samplers);
    result.prompt_ms = ms_since(prompt_start);
    seq.advance(static_cast<uint32_t>(batch.size()));
    sampling.deliver(0, seq, tokenizer, n_ctx);
  }

  const auto gen_start = Clock::now();
  while (!seq.finished()) {
    const uint32_t pos = seq.n_cached();
    const TokenInput input{seq.token_at(pos), pos, seq.slot(), true};
    sampling.run(forward, std::span(&input, 1), samplers);
    seq.advance(1);
    sampling.deliver(0, seq, tokenizer, n_ctx);
  }
  result.generate_ms = ms_since(gen_start);
  seq.report();
  if (text_failure) std::rethrow_exception(text_failure);
  if (done.finish == FinishReason::Error) throw ModelError("generation failed: " + done.error);
  if (on_text && !done.text_tail.empty()) on_text(done.text_tail);
  result.generated_ids = std::move(done.generated_ids);
  result.text = std::move(done.text);
  result.finish = done.finish;
  return result;
}

}  // namespace lamina::model
