// The generation loop: prompt through the forward pass in batches, then one
// token at a time through the sampler, streaming UTF-8-safe text.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

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
};

enum class StopReason { Length, EndOfGeneration, StopString, ContextFull };

struct LAMINA_MODEL_API GenerateResult {
  std::vector<int32_t> prompt_ids;
  std::vector<int32_t> generated_ids;
  std::string text;                  // generated text, stop string removed
  std::vector<float> prompt_logits;  // [n_prompt x n_vocab] when asked
  StopReason stop_reason = StopReason::Length;
  double prompt_ms = 0.0;
  double generate_ms = 0.0;          // from the first sampled token to the last
};

LAMINA_MODEL_API std::string_view stop_reason_name(StopReason reason);

// Receives each piece of text as soon as it is safe to show (complete UTF-8,
// not possibly the start of a stop string).
using TextCallback = std::function<void(std::string_view)>;

// Runs `prompt_ids` (positions from 0 in slot options.seq) and generates.
LAMINA_MODEL_API GenerateResult generate(const Model& model, Forward& forward, const std::vector<int32_t>& prompt_ids,
                                         const GenerateOptions& options, const TextCallback& on_text = {});

}  // namespace lamina::model
