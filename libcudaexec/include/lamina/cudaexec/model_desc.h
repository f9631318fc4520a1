// A model as the executor needs it: hyperparameters, the per-architecture
// switches and host views of every tensor (in their GGUF formats). libmodel
// fills it from a loaded model; libcudaexec knows nothing of GGUF files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "lamina/quant/format.h"
#include "lamina/cudaexec/export.h"

namespace lamina::cudaexec {

enum class NormKind : uint8_t { Rms, Layer };
enum class RopeKind : uint8_t { None, Norm, Neox };  // Norm: pairs (2i, 2i+1); Neox: (i, i + d/2)
// MoeSwigluOai: experts with biases and gpt-oss's clamped SwiGLU,
// min(g, 7) * sigmoid(1.702 min(g, 7)) * (clamp(u, -7, 7) + 1).
enum class FfnKind : uint8_t { GatedSilu, GatedGelu, Gelu, MoeGatedSilu, MoeSwigluOai };
inline bool is_mixture_of_experts(FfnKind k) { return k == FfnKind::MoeGatedSilu || k == FfnKind::MoeSwigluOai; }

// How a mixture picks each token's experts and weighs them: gating values
// (softmax over all experts, or sigmoid), the n_expert_used highest by value
// plus LayerDesc::expert_selection_bias (lower id on ties), weighted by their
// gating values, divided by their sum when `normalize`, times `scale`.
enum class ExpertGating : uint8_t { Softmax, Sigmoid };
struct ExpertRouting {
  ExpertGating gating = ExpertGating::Softmax;
  bool normalize = true;
  float scale = 1.0f;
};

// Multi-head latent attention (deepseek2), run absorbed: one key row per
// position, [rotated k_pe; latent c], shared by every head, whose latent is
// also the value; each head's query moves into the latent space through
// wk_b and its weighted latent out of it through wv_b. So the model's
// n_head_kv is 1, head_dim_k kv_lora_rank + rope_dim, head_dim_v
// kv_lora_rank and rope_dims rope_dim; the cache holds no value rows.
// kv_lora_rank 0: ordinary attention.
struct LatentAttentionDesc {
  uint32_t q_lora_rank = 0, kv_lora_rank = 0, nope_dim = 0, rope_dim = 0, value_dim = 0;
};

// n_out rows of n_in values in `format`, contiguous (ggml [n_in, n_out]);
// for expert tensors, n_expert such matrices one after the other.
struct LAMINA_CUDAEXEC_API HostMatrix {
  quant::QuantFormat format = quant::QuantFormat::F32;
  const void* data = nullptr;
  uint32_t n_in = 0;
  uint32_t n_out = 0;
  uint32_t n_expert = 1;
  explicit operator bool() const { return data != nullptr; }
};

// A 1-D f32 parameter (norm weight, bias).
struct LAMINA_CUDAEXEC_API HostVector {
  const float* data = nullptr;
  uint32_t n = 0;
  explicit operator bool() const { return data != nullptr; }
};

struct LAMINA_CUDAEXEC_API LayerDesc {
  HostVector attn_norm, attn_norm_bias;
  HostMatrix wq, wk, wv, wqkv;  // separate, or wqkv = [q; k; v]
  HostVector bq, bk, bv, bqkv;
  HostVector q_norm, k_norm;    // per-head RMSNorm weights (head_dim_k)
  HostVector attn_sinks;        // per query head, a logit in each softmax's denominator (gpt-oss)
  HostMatrix wo;
  HostVector bo;
  HostVector post_attn_norm;
  HostVector ffn_norm, ffn_norm_bias;
  HostMatrix w_gate, w_up, w_down;  // w_up holds [gate; up] when w_gate is empty (fused)
  HostVector b_up, b_down;
  HostVector post_ffn_norm;
  // Mixture of experts: router [n_embd -> n_expert] and the experts'
  // gate/up/down matrices; optional biases (an expert stack's: n_expert rows
  // of its output width, one after another).
  HostMatrix router, gate_exps, up_exps, down_exps;
  HostVector router_bias, gate_exps_bias, up_exps_bias, down_exps_bias;
  HostVector expert_selection_bias;               // added to the gating values for the choice only
  HostMatrix gate_shexp, up_shexp, down_shexp;    // shared experts: a gated-SiLU FFN added to the mixture
  bool dense_ffn = false;                         // a mixture's leading dense layer (gated SiLU of n_ff)
  // Latent attention: queries from wq (or wq_a, q_a_norm, wq_b), per head
  // [nope; rope] rows; wkv_a gives [latent; k_pe], kv_a_norm normalizes the
  // latent; wk_b per head [nope -> latent] (used transposed), wv_b per head
  // [latent -> value].
  HostMatrix wq_a, wq_b, wkv_a, wk_b, wv_b;
  HostVector q_a_norm, kv_a_norm;
  uint32_t sliding_window = 0;  // 0: attends to every earlier position
  bool rope_local = false;      // rotates with ModelDesc::rope_inv_freq_local
};

struct LAMINA_CUDAEXEC_API ModelDesc {
  NormKind norm = NormKind::Rms;
  RopeKind rope = RopeKind::Norm;
  FfnKind ffn = FfnKind::GatedSilu;
  uint32_t n_layer = 0, n_embd = 0, n_head = 0, n_head_kv = 0;
  uint32_t head_dim_k = 0, head_dim_v = 0, n_ff = 0, n_vocab = 0;
  uint32_t n_expert = 0, n_expert_used = 0, n_ff_expert = 0;  // mixtures of experts
  float norm_eps = 1e-5f;
  uint32_t rope_dims = 0;         // leading dims of each head that rotate
  // Per rotated pair, the angle per position (rope_dims / 2 values); the
  // local one for layers with rope_local (a second base, gemma3).
  std::vector<double> rope_inv_freq, rope_inv_freq_local;
  double rope_magnitude = 1.0;  // the factor of rope_inv_freq's cos and sin (YaRN)
  float attn_scale = 1.0f;        // scores = q.k * attn_scale
  float attn_softcap = 0.0f;      // 0: none
  float final_softcap = 0.0f;     // 0: none
  float embed_scale = 1.0f;       // token embeddings times this
  // GELU through this table of 65536 f16 results, one per f16 input (the
  // CPU path's llama.cpp-compatible numerics); null computes it exactly.
  const uint16_t* gelu_f16_table = nullptr;
  ExpertRouting routing;
  LatentAttentionDesc mla;
  HostMatrix token_embd, position_embd, output;
  HostVector output_norm, output_norm_bias;
  std::vector<LayerDesc> layers;
};

}  // namespace lamina::cudaexec
