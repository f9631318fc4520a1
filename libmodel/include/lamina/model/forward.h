// The CPU forward pass: a batch of tokens (of one or several sequences)
// through every layer, with the KV cache, producing logits where asked.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "lamina/model/kv_cache.h"
#include "lamina/model/model.h"

namespace lamina::quant {
class ThreadPool;
}

namespace lamina::model {

struct ForwardOptions {
  uint32_t n_ctx = 0;        // positions per sequence; 0: the model's training context (capped at 4096)
  uint32_t n_seq = 1;        // sequence slots in the KV cache
  uint32_t max_batch = 512;  // tokens per internal step; larger batches are split
  KvType kv_type = KvType::F32;
  int n_threads = 0;         // 0: all hardware threads
  // Exact numerics: quantized weights meet f32 activations and GELU is
  // computed exactly. The default follows llama.cpp's CPU backend instead
  // (activations quantized to Q8 for quantized weights, GELU through an f16
  // table), which is much faster and reproduces its logits closely.
  bool exact_activations = false;
};

struct TokenInput {
  int32_t token = 0;
  uint32_t pos = 0;   // position within its sequence
  uint32_t seq = 0;   // KV cache slot
  bool logits = false;
};

class CpuForward {
 public:
  CpuForward(const Model& model, const ForwardOptions& options);
  ~CpuForward();
  CpuForward(const CpuForward&) = delete;
  CpuForward& operator=(const CpuForward&) = delete;

  // Runs `batch` (tokens of a sequence must come in position order, and a
  // position's earlier positions must already be in the cache or earlier in
  // the batch). Returns the logits of the entries with `logits` set, in batch
  // order, [n_wanted x n_vocab]; valid until the next call.
  // A sequence's logits never depend on what else is in the batch.
  std::span<const float> decode(std::span<const TokenInput> batch);

  const ModelConfig& config() const;
  uint32_t n_ctx() const;
  uint32_t n_seq() const;
  int n_threads() const;
  std::size_t kv_cache_bytes() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace lamina::model
