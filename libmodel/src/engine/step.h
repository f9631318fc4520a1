// The sampling half of a forward step, shared by the Engine and generate():
// when every sequence sampling from the step wants only the argmax, the
// forward pass picks the tokens itself (on a GPU only the ids cross the bus);
// else the logits come back and each sequence samples its own row. The same
// logits give the same ids either way.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/sequence.h"
#include "lamina/model/forward.h"
#include "lamina/model/tokenizer.h"

namespace lamina::model::engine {

class StepSampling {
 public:
  explicit StepSampling(uint32_t n_vocab) : n_vocab_(n_vocab), row_(n_vocab) {}

  // Runs `batch`; its positions that ask for logits belong, in order, to
  // `samplers`. Throws what the forward pass throws.
  void run(Forward& forward, std::span<const TokenInput> batch, std::span<Sequence* const> samplers);
  // Gives samplers[i] of the last run its token, once the step's positions
  // are committed. A sequence that fails to take it ends with an Error.
  void deliver(std::size_t i, Sequence& sequence, const Tokenizer& tokenizer, uint32_t n_ctx);

 private:
  uint32_t n_vocab_;
  bool argmax_only_ = false;
  std::span<const float> logits_;
  std::vector<int32_t> ids_;
  std::vector<float> row_;  // scratch: the sampler's penalties change it
};

}  // namespace lamina::model::engine
