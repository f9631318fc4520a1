// Generation for one request, without a thread: the prompt through the
// forward pass in one batch, then one token at a time. The request is a batch
// of one through the Engine's own sequence logic (sampling, end-of-generation
// and stop strings, finish reasons, streamed text), so both give the same
// tokens and text for the same request.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lamina/model/engine.h"
#include "lamina/model/forward.h"
#include "lamina/model/model.h"
#include "lamina/model/sampler.h"
#include "lamina/model/export.h"

namespace lamina::model {

struct LAMINA_MODEL_API GenerateOptions {
  int32_t n_predict = 128;          // < 0: until the context is full
  SamplerOptions sampling;
  std::vector<std::string> stop;    // stop strings (not included in the text)
  bool stop_at_eog = true;          // end-of-generation tokens stop
  bool skip_special_tokens = true;  // the text leaves out special tokens (Hugging Face's decode option)
  bool want_prompt_logits = false;  // keep the logits of every prompt position
  uint32_t seq = 0;                 // KV cache slot to use
  std::shared_ptr<TokenConstraint> constraint;  // structured output (lamina/model/grammar.h); null: free text
};

struct LAMINA_MODEL_API GenerateResult {
  std::vector<int32_t> prompt_ids;
  std::vector<int32_t> generated_ids;
  std::string text;                  // generated text, stop string removed
  std::vector<float> prompt_logits;  // [n_prompt x n_vocab] when asked
  FinishReason finish = FinishReason::Length;  // never Cancelled or Error
  double prompt_ms = 0.0;
  double generate_ms = 0.0;          // from the first sampled token to the last
};

// Receives each piece of text as soon as it is safe to show (complete UTF-8,
// not possibly the start of a stop string).
using TextCallback = std::function<void(std::string_view)>;

// Runs `prompt_ids` (positions from 0 in slot options.seq) and generates.
// Throws std::invalid_argument for a request the Engine would refuse (empty
// prompt, prompt not shorter than the context, id outside the vocabulary) or a
// slot the forward pass lacks; what the forward pass or on_text throws passes through.
LAMINA_MODEL_API GenerateResult generate(const Model& model, Forward& forward, const std::vector<int32_t>& prompt_ids,
                                         const GenerateOptions& options, const TextCallback& on_text = {});

}  // namespace lamina::model
