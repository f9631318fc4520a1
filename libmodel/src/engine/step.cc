#include "engine/step.h"

#include <exception>

namespace lamina::model::engine {

void StepSampling::run(Forward& forward, std::span<const TokenInput> batch, std::span<Sequence* const> samplers) {
  argmax_only_ = true;
  for (const Sequence* seq : samplers)
    if (!seq->needs_only_argmax()) argmax_only_ = false;
  logits_ = {};
  ids_.clear();
  if (argmax_only_)
    ids_ = forward.decode_greedy(batch);
  else
    logits_ = forward.decode(batch);
}

void StepSampling::deliver(std::size_t i, Sequence& sequence, const Tokenizer& tokenizer, uint32_t n_ctx) {
  try {
    if (argmax_only_) {
      sequence.on_argmax(ids_.at(i), tokenizer, n_ctx);
    } else {
      const auto src = logits_.subspan(i * n_vocab_, n_vocab_);
      row_.assign(src.begin(), src.end());
      sequence.on_logits(row_, tokenizer, n_ctx);
    }
  } catch (const std::exception& e) {
    sequence.finish(FinishReason::Error, e.what());
  }
}

}  // namespace lamina::model::engine
