#include "lamina/model/generate.h"

#include <algorithm>
#include <chrono>

#include "generated_text.h"

namespace lamina::model {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

}  // namespace

std::string_view stop_reason_name(StopReason reason) {
  switch (reason) {
    case StopReason::Length: return "length";
    case StopReason::EndOfGeneration: return "eog";
    case StopReason::StopString: return "stop";
    case StopReason::ContextFull: return "context";
  }
  return "?";
}

GenerateResult generate(const Model& model, Forward& forward, const std::vector<int32_t>& prompt_ids,
                        const GenerateOptions& options, const TextCallback& on_text) {
  const Tokenizer& tok = model.tokenizer();
  const uint32_t n_vocab = model.config().n_vocab;
  const uint32_t n_ctx = forward.n_ctx();
  if (prompt_ids.empty()) throw ModelError("the prompt has no tokens");
  if (prompt_ids.size() >= n_ctx)
    throw ModelError("the prompt has " + std::to_string(prompt_ids.size()) + " tokens, the context holds " +
                     std::to_string(n_ctx) + " (raise --ctx-size)");

  GenerateResult result;
  result.prompt_ids = prompt_ids;
  Sampler sampler(options.sampling);
  for (int32_t id : prompt_ids) sampler.accept(id);

  std::vector<TokenInput> batch(prompt_ids.size());
  for (std::size_t i = 0; i < prompt_ids.size(); ++i) {
    batch[i] = {prompt_ids[i], static_cast<uint32_t>(i), options.seq,
                options.want_prompt_logits || i + 1 == prompt_ids.size()};
  }
  const auto prompt_start = Clock::now();
  auto logits = forward.decode(batch);
  result.prompt_ms = ms_since(prompt_start);
  if (options.want_prompt_logits) result.prompt_logits.assign(logits.begin(), logits.end());
  std::vector<float> last(logits.end() - n_vocab, logits.end());

  GeneratedText generated(tok, prompt_ids, options.skip_special_tokens, options.stop);
  std::size_t shown = 0;
  const auto gen_start = Clock::now();
  uint32_t pos = static_cast<uint32_t>(prompt_ids.size());
  // Plain greedy decoding needs no logits on the host: the forward pass
  // returns the argmax (on a GPU only the id crosses the bus).
  const bool pure_greedy = sampler.picks_argmax();
  int32_t greedy_next = pure_greedy ? sampler.sample(last) : -1;
  for (int32_t n = 0; options.n_predict < 0 || n < options.n_predict; ++n) {
    const int32_t next = pure_greedy ? greedy_next : sampler.sample(last);
    if (options.stop_at_eog && tok.is_eog(next)) {
      result.stop_reason = StopReason::EndOfGeneration;
      break;
    }
    result.generated_ids.push_back(next);
    sampler.accept(next);
    if (generated.append(next, result.text)) {
      result.stop_reason = StopReason::StopString;
      break;
    }
    if (on_text) {
      const std::size_t safe = generated.safe_length(result.text);
      if (safe > shown) {
        on_text(std::string_view(result.text).substr(shown, safe - shown));
        shown = safe;
      }
    }
    if (options.n_predict >= 0 && n + 1 == options.n_predict) break;
    if (pos >= n_ctx) {
      result.stop_reason = StopReason::ContextFull;
      break;
    }
    const TokenInput input{next, pos++, options.seq, true};
    if (pure_greedy) {
      greedy_next = forward.decode_greedy(std::span(&input, 1)).at(0);
    } else {
      logits = forward.decode(std::span(&input, 1));
      std::copy(logits.begin(), logits.end(), last.begin());
    }
  }
  if (result.stop_reason != StopReason::StopString && generated.finish(result.text))
    result.stop_reason = StopReason::StopString;
  result.generate_ms = ms_since(gen_start);
  if (on_text && result.text.size() > shown) on_text(std::string_view(result.text).substr(shown));
  return result;
}

}  // namespace lamina::model
