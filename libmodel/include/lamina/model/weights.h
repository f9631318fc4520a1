// The tensors of a model, bound once at load to views into the file mapping.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "lamina/gguf/file.h"
#include "lamina/model/config.h"
#include "lamina/quant/format.h"
#include "lamina/model/export.h"

namespace lamina::model {

// A weight matrix in its file format: n_out rows of n_in values (ggml [n_in, n_out]).
// For expert tensors ([n_in, n_out, n_expert]) `n_expert` matrices follow each other.
struct LAMINA_MODEL_API Matrix {
  quant::QuantFormat format = quant::QuantFormat::F32;
  const std::byte* data = nullptr;
  uint32_t n_in = 0;
  uint32_t n_out = 0;
  uint32_t n_expert = 1;
  std::size_t row_bytes = 0;

  explicit operator bool() const { return data != nullptr; }
  const std::byte* row(std::size_t r) const { return data + r * row_bytes; }
  Matrix expert(uint32_t e) const {
    Matrix m = *this;
    m.n_expert = 1;
    m.data = data + static_cast<std::size_t>(e) * n_out * row_bytes;
    return m;
  }
};

// A 1-D F32 parameter (norm weight, bias, rope factors).
struct LAMINA_MODEL_API Vector {
  const float* data = nullptr;
  uint32_t n = 0;
  explicit operator bool() const { return data != nullptr; }
};

struct LAMINA_MODEL_API LayerWeights {
  Vector attn_norm, attn_norm_bias;
  Matrix wq, wk, wv, wqkv;  // separate or fused, per the architecture
  Vector bq, bk, bv, bqkv;
  Vector q_norm, k_norm;
  Matrix wo;
  Vector bo;
  Vector post_attn_norm;
  Vector ffn_norm, ffn_norm_bias;
  Matrix w_gate, w_up, w_down;  // w_up holds [gate; up] when fused
  Vector b_up, b_down;
  Vector post_ffn_norm;
  Matrix router;  // MoE: [n_embd -> n_expert]
  Vector expert_selection_bias;  // exp_probs_b: added to the gating values for the choice only
  Matrix gate_exps, up_exps, down_exps;
  // gpt-oss: the router's and experts' biases (an expert stack's biases are
  // n_expert rows of its output width, one after another) and one
  // attention-sink logit per head.
  Vector router_bias, gate_exps_bias, up_exps_bias, down_exps_bias;
  Vector attn_sinks;
  Matrix gate_shexp, up_shexp, down_shexp;  // shared experts, stacked into one FFN
  // Latent attention: Q straight (wq) or through a rank-q_lora_rank bottleneck,
  // [latent; rotated k] from wkv_a, and per head (n_expert = n_head) the
  // latent -> unrotated-K expansion, used transposed (k_b: [nope -> latent])
  // to absorb queries, and the latent -> V expansion (v_b).
  Matrix wq_a, wq_b, wkv_a, wk_b, wv_b;
  Vector q_a_norm, kv_a_norm;
};

struct LAMINA_MODEL_API Weights {
  Matrix token_embd;
  Matrix position_embd;
  Matrix output;  // token_embd when tied
  Vector output_norm, output_norm_bias;
  Vector rope_freqs;
  std::vector<LayerWeights> layers;
  // Owned F32 copies of 1-D tensors stored in another type.
  std::vector<std::unique_ptr<float[]>> converted;
};

// Binds every tensor the architecture needs, checking types and shapes.
// Throws ModelError naming the tensor on anything missing or inconsistent.
LAMINA_MODEL_API Weights bind_weights(const gguf::GgufFile& file, const ModelConfig& config);

}  // namespace lamina::model
