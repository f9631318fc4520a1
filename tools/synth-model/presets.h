// The model shapes lamina-synth-model can write: real models' dimensions
// (and tokenizer sizes) with random weights, plus tiny ones for tests.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace lamina::synth {

// How a preset's tokenizer looks: a byte-level BPE vocabulary ("gpt2") with
// the pre-tokenizer and special tokens of the model family it imitates.
struct TokenizerStyle {
  std::string_view pre;                         // tokenizer.ggml.pre
  std::span<const std::string_view> specials;   // the first special tokens, in id order
  std::string_view filler_prefix;               // the rest: "<|" prefix "N|>"
  uint32_t filler_first = 0;                    // N of the first of the rest
  uint32_t n_special;                           // special tokens at the end of the vocabulary
  std::string_view bos, eos, padding;           // texts of special tokens ("" = none)
  bool add_bos;
  std::string_view chat_template;
};

// DeepSeek V2/V3 (deepseek2): latent attention, shared experts, leading
// dense layers and YaRN. The preset's n_ff is each routed expert's width.
struct LatentShape {
  uint32_t q_lora_rank;  // 0: queries straight from attn_q (V2-Lite)
  uint32_t kv_lora_rank;
  uint32_t nope_dim, rope_dim, value_dim;
  uint32_t n_expert_shared;
  uint32_t n_dense_lead;
  uint32_t n_ff_dense;  // the leading dense layers' width
  float expert_weights_scale;
  float yarn_factor;
  uint32_t yarn_orig_ctx;
  float yarn_log_multiplier;
};

struct ModelPreset {
  std::string_view name;  // what users type: "qwen2-0.5b"
  std::string_view arch;  // general.architecture
  uint32_t n_layer;
  uint32_t n_embd;
  uint32_t n_head;
  uint32_t n_head_kv;
  uint32_t n_ff;
  uint32_t n_vocab;
  uint32_t n_ctx;
  float rope_theta;
  float rms_eps;
  bool qkv_bias;
  bool tied_embeddings;  // no output.weight: the output reuses token_embd
  const TokenizerStyle* tokenizer;
  // Mixture of experts (Mixtral, stored as llama): n_ff is each expert's width.
  uint32_t n_expert = 0;
  uint32_t n_expert_used = 0;
  // Gemma 3: q/k norms, post norms and embeddings times sqrt(n_embd) come with
  // the architecture; these are its shape and its local layers.
  uint32_t head_dim_override = 0;  // 0: n_embd / n_head
  uint32_t sliding_window = 0;
  uint32_t sliding_window_pattern = 0;
  float rope_theta_swa = 0.0f;
  const LatentShape* mla = nullptr;

  uint32_t head_dim() const { return head_dim_override ? head_dim_override : n_embd / n_head; }
  bool gemma3() const { return arch == "gemma3"; }
  // gpt-oss: attention sinks, biases everywhere, YaRN and the window on even
  // layers come with the architecture (qkv_bias must be set).
  bool gpt_oss() const { return arch == "gpt-oss"; }
};

std::span<const ModelPreset> all_presets();
const ModelPreset* find_preset(std::string_view name);

}  // namespace lamina::synth
