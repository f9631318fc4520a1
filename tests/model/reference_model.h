// The reference forward pass's view of a model: which architecture it is
// (a row of a small table), its hyperparameters from GGUF metadata, and its
// weights dequantized to f32 once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lamina/gguf/file.h"
#include "lamina/quant/format.h"

namespace lamina::model::reference {

enum class NormKind { Rms, Layer };           // RMSNorm, or LayerNorm with bias
enum class RopeKind { None, Norm, Neox };     // Norm: pairs (2i, 2i+1); Neox: (i, i + n_rot/2)
enum class Activation { Silu, Gelu };         // Gelu is the tanh approximation
enum class FfnKind {
  Gated,         // down(act(gate x) * up x)
  GatedFused,    // ffn_up holds [gate; up] stacked by rows
  Plain,         // down(act(up x))
  MixtureOfExperts,
};

// What distinguishes one architecture from another. Everything else is the
// same pre-norm transformer block.
struct ArchTraits {
  std::string_view name;
  NormKind norm;
  RopeKind rope;
  FfnKind ffn;
  Activation activation;
  bool fused_qkv = false;           // attn_qkv rows [Q; K; V]
  bool qk_norm = false;             // RMSNorm over each Q and K head before RoPE
  bool post_norms = false;          // gemma2: RMSNorm on attention and FFN outputs
  bool learned_positions = false;   // gpt2: position_embd added to the input
  bool scale_embeddings = false;    // gemma2: input embeddings times sqrt(n_embd)
  bool sliding_window_on_even_layers = false;  // gemma2
  // gemma3: layer il is local iff il % P < P - 1 (P: sliding_window_pattern,
  // 6 when absent); local layers rotate with rope.freq_base_swa, unscaled.
  bool sliding_window_pattern = false;
  // gpt-oss: a sink logit per head in every softmax denominator; a router
  // bias; experts with biases and the clamped SwiGLU; the pre-FFN norm
  // stored as post_attention_norm.
  bool attention_sinks = false;
  bool oai_experts = false;
  std::string_view ffn_norm = "ffn_norm";
  // deepseek2: multi-head latent attention, leading dense layers, shared
  // experts, gating and weight scale from the file, YaRN.
  bool latent_attention = false;
};

// The table entry for `arch` ("llama", "qwen2", ...); throws std::runtime_error
// naming the architecture when it is not in the table.
const ArchTraits& arch_traits(std::string_view arch);

// Hyperparameters, read from `<arch>.*` metadata keys with llama.cpp's defaults.
struct ModelConfig {
  ArchTraits arch;
  uint32_t n_layer = 0;
  uint32_t n_embd = 0;
  uint32_t n_ff = 0;
  uint32_t n_head = 0;
  uint32_t n_head_kv = 0;
  uint32_t head_dim_k = 0;  // attention.key_length
  uint32_t head_dim_v = 0;  // attention.value_length
  uint32_t n_rot = 0;       // rope.dimension_count
  uint32_t n_vocab = 0;     // rows of token_embd
  uint32_t n_ctx_train = 0;
  double norm_eps = 0.0;
  double rope_base = 10000.0;
  double rope_scale = 1.0;     // linear rope scaling: positions times this
  double rope_base_swa = 0.0;  // 0: local layers rotate like the others
  uint32_t window_period = 0;  // sliding_window_pattern
  double attn_softcap = 0.0;   // 0: none
  double final_softcap = 0.0;  // 0: none
  uint32_t sliding_window = 0;
  double yarn_factor = 0.0;     // rope.scaling.factor with YaRN; 0: no YaRN
  uint32_t yarn_orig_ctx = 0;   // rope.scaling.original_context_length
  uint32_t n_expert = 0;
  uint32_t n_expert_used = 0;
  uint32_t n_ff_expert = 0;
  // deepseek2
  uint32_t n_expert_shared = 0;
  uint32_t n_dense_lead = 0;
  bool sigmoid_gating = false;
  bool expert_weights_norm = true;
  double expert_weights_scale = 1.0;
  uint32_t q_lora_rank = 0, kv_lora_rank = 0, nope_dim = 0, value_dim = 0;
  double yarn_log_multiplier = 0.0;  // rope.scaling.yarn_log_multiplier
};

ModelConfig read_config(const gguf::GgufFile& file);

// A weight matrix of `rows` x `cols` (cols = ne0, the contiguous length),
// dequantized exactly. `format` is the storage type in the file, which
// decides how ggml would quantize the activations it multiplies.
struct Matrix {
  size_t rows = 0;
  size_t cols = 0;
  quant::QuantFormat format = quant::QuantFormat::F32;
  std::vector<float> values;

  const float* row(size_t r) const { return values.data() + r * cols; }
};

using Vector = std::vector<float>;  // norm weights and biases

struct LayerWeights {
  Vector attn_norm, attn_norm_bias;
  Matrix wq, wk, wv, wqkv;  // either the three or the fused one
  Vector bq, bk, bv, bqkv;  // empty when the file has no bias
  Vector q_norm, k_norm;
  Matrix wo;
  Vector bo;
  Vector post_attention_norm;
  Vector ffn_norm, ffn_norm_bias;
  Matrix ffn_gate, ffn_up, ffn_down;
  Vector ffn_up_bias, ffn_down_bias;
  Vector post_ffw_norm;
  Matrix router;  // ffn_gate_inp
  std::vector<Matrix> expert_gate, expert_up, expert_down;
  Vector attn_sinks;  // gpt-oss (empty elsewhere), as the biases below
  Vector router_bias;
  std::vector<Vector> expert_gate_bias, expert_up_bias, expert_down_bias;
  Vector expert_bias;  // exp_probs_b
  Matrix shexp_gate, shexp_up, shexp_down;
  Matrix wq_a, wq_b, wkv_a;
  Vector q_a_norm, kv_a_norm;
  std::vector<Matrix> k_b, v_b;  // per head: [kv_lora rows of nope], [value rows of kv_lora]
};

struct ModelWeights {
  Matrix token_embd;
  Matrix position_embd;
  Vector output_norm, output_norm_bias;
  Matrix output;      // token_embd's copy when the output is tied
  Vector rope_freqs;  // empty: no frequency factors
  std::vector<LayerWeights> layers;
};

ModelWeights load_weights(const gguf::GgufFile& file, const ModelConfig& config);

}  // namespace lamina::model::reference
