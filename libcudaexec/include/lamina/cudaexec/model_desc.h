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
  // Mixtures of experts: picks each token's n_expert_used experts and their
  // weights from its router logits ([n_tokens x n_expert]; order is scratch
  // of n_expert; chosen and weights [n_tokens x n_expert_used], by rank). The
  // caller's own router, so the GPU chooses exactly as the CPU path does.
  using ExpertRouter = void (*)(const float* logits, std::size_t n_tokens, uint32_t n_expert, uint32_t n_used,
                                uint32_t* order, int32_t* chosen, float* weights);
  ExpertRouter route_experts = nullptr;
  HostMatrix token_embd, position_embd, output;
  HostVector output_norm, output_norm_bias;
  std::vector<LayerDesc> layers;
};

}  // namespace lamina::cudaexec
