// Internal: what every forward pass (CPU and GPU) resolves and checks the same
// way: the context size an option of 0 stands for, and the batch's bounds.
#pragma once

#include <cstdint>
#include <limits>
#include <span>

#include "lamina/model/config.h"
#include "lamina/model/forward.h"

namespace lamina::model {

// ForwardOptions::n_ctx resolved: `requested`, or for 0 the model's training
// context capped at 4096 (4096 when the model does not say).
uint32_t context_size(const ModelConfig& config, uint32_t requested);

struct BatchLimits {
  uint32_t n_vocab = 0;
  uint32_t n_ctx = 0;
  uint32_t n_seq = 0;
  uint32_t n_learned_positions = std::numeric_limits<uint32_t>::max();  // a learned position table's rows
};

// Throws ModelError naming the first token of `batch` outside the limits:
// an id outside the vocabulary, a position past the context or the learned
// positions, a sequence without a KV cache slot.
void check_batch(std::span<const TokenInput> batch, const BatchLimits& limits);

}  // namespace lamina::model
