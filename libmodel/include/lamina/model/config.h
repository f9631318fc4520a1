// Hyperparameters of a model, read from GGUF metadata and checked for consistency.
#pragma once

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "lamina/gguf/file.h"
#include "lamina/model/architecture.h"
#include "lamina/model/export.h"

namespace lamina::model {

// A model file that cannot be run: missing or inconsistent metadata or tensors,
// an unknown architecture or tensor type. The message names what and where.
class LAMINA_MODEL_API ModelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct LAMINA_MODEL_API RopeConfig {
  RopeKind kind = RopeKind::None;
  uint32_t n_dims = 0;          // leading dims of each head that rotate
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;      // linear scaling: positions are multiplied by this
  // The windowed layers' base (rope.freq_base_swa, gemma3), which llama.cpp
  // applies without the scaling; 0: those layers rotate like the others.
  float freq_base_swa = 0.0f;
  bool has_freq_factors = false;  // rope_freqs.weight divides each pair's frequency
  // YaRN (rope.scaling.type yarn): the training context the scaling
  // extends (rope.scaling.original_context_length), 0 without YaRN. Pairs
  // rotating faster than beta_fast turns over that context keep their
  // frequency, slower than beta_slow take freq_scale's, a linear ramp
  // between; cos and sin are multiplied by `magnitude` (gpt-oss: 1 + 0.1
  // ln(1 / freq_scale); deepseek2: 1, its temperature is in the scores).
  uint32_t yarn_orig_ctx = 0;
  float yarn_beta_fast = 32.0f;
  float yarn_beta_slow = 1.0f;
  float magnitude = 1.0f;
};

// Multi-head latent attention (deepseek2): K and V of every head are
// expanded from one shared latent vector per position. The cache holds the
// latent and the rotated part of K only; queries are absorbed into the
// latent space (see cpu/latent_attention.h).
struct LAMINA_MODEL_API LatentAttentionConfig {
  uint32_t q_lora_rank = 0;   // 0: queries straight from attn_q
  uint32_t kv_lora_rank = 0;  // the latent's width; 0: no MLA
  uint32_t nope_dim = 0;      // per head: the unrotated part of Q and K
  uint32_t rope_dim = 0;      // per head: the rotated part (rope.dimension_count)
  uint32_t value_dim = 0;     // per head: V's width
  uint32_t q_head_dim() const { return nope_dim + rope_dim; }
};

enum class ExpertGating { Softmax, Sigmoid };

struct LAMINA_MODEL_API ModelConfig {
  const ArchSpec* arch = nullptr;
  uint32_t n_layer = 0;
  uint32_t n_embd = 0;
  uint32_t n_head = 0;
  uint32_t n_head_kv = 0;
  uint32_t head_dim_k = 0;   // attention.key_length, n_embd / n_head by default
  uint32_t head_dim_v = 0;   // attention.value_length
  uint32_t n_ff = 0;
  uint32_t n_vocab = 0;
  uint32_t n_ctx_train = 0;
  float norm_eps = 1e-5f;
  RopeConfig rope;
  float attn_scale = 0.0f;     // scores = q.k * attn_scale: attention.scale, else 1/sqrt(head_dim_k)
  float attn_softcap = 0.0f;   // 0: none
  float final_softcap = 0.0f;  // 0: none
  uint32_t sliding_window = 0; // 0: none
  uint32_t sliding_window_pattern = 0;  // WindowLayers::Pattern's period
  uint32_t n_expert = 0;
  uint32_t n_expert_used = 0;
  uint32_t n_ff_expert = 0;
  uint32_t n_expert_shared = 0;      // always-on experts of width n_ff_expert each
  uint32_t n_dense_lead = 0;         // leading layers with a dense FFN (n_ff)
  ExpertGating expert_gating = ExpertGating::Softmax;
  bool expert_weights_norm = true;   // the chosen experts' weights renormalised to sum 1
  float expert_weights_scale = 1.0f;
  LatentAttentionConfig mla;

  bool latent_attention() const { return mla.kv_lora_rank > 0; }
  // The shared experts' width, stacked into one FFN (0: none).
  uint32_t n_ff_shared() const { return n_ff_expert * n_expert_shared; }

  uint32_t q_dim() const { return n_head * head_dim_k; }
  uint32_t k_dim() const { return n_head_kv * head_dim_k; }
  uint32_t v_dim() const { return n_head_kv * head_dim_v; }
  // The FFN this file's layers use: the architecture's, or experts where the
  // architecture allows them and the file has some.
  FfnKind ffn() const { return n_expert > 0 ? FfnKind::MoeGatedSilu : arch->ffn; }
  // The FFN of one layer: the leading dense layers of a mixture of experts
  // (deepseek2) run a gated SiLU of width n_ff.
  FfnKind ffn(uint32_t layer) const { return layer < n_dense_lead ? FfnKind::GatedSilu : ffn(); }
  // The factor of the token embeddings: sqrt(n_embd) where the architecture
  // scales them (gemma), else 1.
  float embedding_scale() const { return arch->scale_embeddings ? std::sqrt(static_cast<float>(n_embd)) : 1.0f; }
  // Whether `layer` rotates with rope.freq_base_swa instead of the main base.
  bool layer_uses_swa_rope(uint32_t layer) const { return rope.freq_base_swa > 0 && layer_uses_window(layer); }
  bool layer_uses_window(uint32_t layer) const {
    if (sliding_window == 0) return false;
    switch (arch->sliding_window_layers) {
      case WindowLayers::All: return true;
      case WindowLayers::Even: return layer % 2 == 0;
      case WindowLayers::Pattern: return layer % sliding_window_pattern < sliding_window_pattern - 1;
      case WindowLayers::None: break;
    }
    return false;
  }
};

// Reads and validates the hyperparameters of `file`. Throws ModelError.
LAMINA_MODEL_API ModelConfig load_config(const gguf::GgufFile& file);

}  // namespace lamina::model
