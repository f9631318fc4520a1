#include "lamina/model/config.h"

#include <cmath>

namespace lamina::model {
namespace {

class MetadataReader {
 public:
  MetadataReader(const gguf::GgufFile& file, std::string arch) : file_(file), arch_(std::move(arch)) {}

  // `<arch>.suffix` as an unsigned integer of any width.
  std::optional<uint32_t> u32(const std::string& suffix) const {
    const std::string key = arch_ + "." + suffix;
    const gguf::Value* v = file_.find(key);
    if (!v) return std::nullopt;
    uint64_t x;
    try {
      x = v->as_uint64();
    } catch (const std::exception& e) {
      throw ModelError("metadata '" + key + "': " + e.what());
    }
    if (x > UINT32_MAX) throw ModelError("metadata '" + key + "': value " + std::to_string(x) + " too large");
    return static_cast<uint32_t>(x);
  }

  uint32_t required_u32(const std::string& suffix) const {
    auto v = u32(suffix);
    if (!v) throw ModelError("missing metadata key '" + arch_ + "." + suffix + "'");
    return *v;
  }

  std::optional<float> f32(const std::string& suffix) const {
    const std::string key = arch_ + "." + suffix;
    const gguf::Value* v = file_.find(key);
    if (!v) return std::nullopt;
    try {
      return static_cast<float>(v->as_double());
    } catch (const std::exception& e) {
      throw ModelError("metadata '" + key + "': " + e.what());
    }
  }

  std::optional<bool> boolean(const std::string& suffix) const {
    const std::string key = arch_ + "." + suffix;
    const gguf::Value* v = file_.find(key);
    if (!v) return std::nullopt;
    if (v->type() != gguf::ValueType::Bool) throw ModelError("metadata '" + key + "' is not a boolean");
    return v->as<bool>();
  }

  std::optional<std::string> str(const std::string& suffix) const {
    const std::string key = arch_ + "." + suffix;
    const gguf::Value* v = file_.find(key);
    if (!v) return std::nullopt;
    if (v->type() != gguf::ValueType::String) throw ModelError("metadata '" + key + "' is not a string");
    return v->as_string();
  }

 private:
  const gguf::GgufFile& file_;
  std::string arch_;
};

void require(bool ok, const std::string& what) {
  if (!ok) throw ModelError(what);
}

uint32_t vocab_size(const gguf::GgufFile& file, const MetadataReader& md) {
  if (auto n = md.u32("vocab_size")) return *n;
  if (const auto* tokens = file.find("tokenizer.ggml.tokens"); tokens && tokens->type() == gguf::ValueType::Array)
    return static_cast<uint32_t>(tokens->as_array().size());
  const auto* embd = file.find_tensor("token_embd.weight");
  require(embd != nullptr, "cannot tell the vocabulary size: no tokenizer.ggml.tokens and no token_embd.weight");
  return static_cast<uint32_t>(embd->ne[1]);
}

// The width attention scores are scaled by, 1/sqrt(width), where the file
// states no attention.scale. Gemma 2 and 3 27B (46 and 62 layers) were
// trained with query_pre_attn_scalar = n_embd / n_head rather than the head
// size, and llama.cpp's converter writes no key for it: llama.cpp knows them
// by their layer count, and so does lamina.
uint32_t default_scale_width(const ModelConfig& c) {
  const bool gemma_27b = (c.arch->name == "gemma2" && c.n_layer == 46) || (c.arch->name == "gemma3" && c.n_layer == 62);
  // Latent attention scores are a head's q . k over its nope + rope dims,
  // whatever width the absorbed form computes them in.
  if (c.latent_attention()) return c.mla.q_head_dim();
  return gemma_27b ? c.n_embd / c.n_head : c.head_dim_k;
}

std::string u32_text(uint32_t v) { return std::to_string(v); }

// YaRN as llama.cpp computes it: the magnitude factor 1 + 0.1 ln(factor)
// on cos and sin (gpt-oss), except for deepseek2, where llama.cpp cancels it
// (handing its inverse in as the attention factor) and the scores get
// mscale^2 instead (load_config).
void read_yarn(const MetadataReader& md, ModelConfig& c, float factor) {
  const std::string& arch = std::string(c.arch->name);
  require(std::isfinite(factor) && factor >= 1.0f,
          arch + ": rope.scaling.factor " + std::to_string(factor) + " must be at least 1 for YaRN");
  c.rope.freq_scale = 1.0f / factor;
  c.rope.magnitude = c.arch->latent_attention ? 1.0f : 1.0f + 0.1f * std::log(factor);
  c.rope.yarn_orig_ctx = md.u32("rope.scaling.original_context_length").value_or(c.n_ctx_train);
  require(c.rope.yarn_orig_ctx > 0, arch + ": YaRN needs rope.scaling.original_context_length (or context_length)");
  c.rope.yarn_beta_fast = md.f32("rope.scaling.yarn_beta_fast").value_or(32.0f);
  c.rope.yarn_beta_slow = md.f32("rope.scaling.yarn_beta_slow").value_or(1.0f);
  require(std::isfinite(c.rope.yarn_beta_fast) && std::isfinite(c.rope.yarn_beta_slow) && c.rope.yarn_beta_fast > 0 &&
              c.rope.yarn_beta_slow > 0,
          arch + ": rope.scaling.yarn_beta_fast and yarn_beta_slow must be positive");
}

// deepseek2's attention shape. Files converted before llama.cpp split
// attn_kv_b into attn_k_b and attn_v_b have no key_length_mla: refused.
void read_latent_attention(const MetadataReader& md, ModelConfig& c) {
  const std::string arch(c.arch->name);
  LatentAttentionConfig& m = c.mla;
  m.q_lora_rank = md.u32("attention.q_lora_rank").value_or(0);
  m.kv_lora_rank = md.required_u32("attention.kv_lora_rank");
  const auto k_mla = md.u32("attention.key_length_mla");
  const auto v_mla = md.u32("attention.value_length_mla");
  require(k_mla && v_mla, arch + ": missing attention.key_length_mla / value_length_mla (a file from before the split "
                                 "attn_k_b/attn_v_b layout: convert it again with a current converter)");
  require(c.rope.kind != RopeKind::None && c.rope.n_dims > 0, arch + ": rope.dimension_count must be positive");
  require(m.kv_lora_rank > 0, arch + ": attention.kv_lora_rank must be positive");
  require(*k_mla > c.rope.n_dims, arch + ": attention.key_length_mla " + u32_text(*k_mla) +
                                      " must exceed rope.dimension_count " + u32_text(c.rope.n_dims));
  require(*v_mla > 0, arch + ": attention.value_length_mla must be positive");
  m.rope_dim = c.rope.n_dims;
  m.nope_dim = *k_mla - m.rope_dim;
  m.value_dim = *v_mla;
  // The cache's one "KV head": [latent; rotated k] as K, the latent as V.
  require(c.n_head_kv == 1, arch + ": attention.head_count_kv is " + u32_text(c.n_head_kv) +
                                " (latent attention caches one shared row: 1)");
  require(c.head_dim_k == m.kv_lora_rank + m.rope_dim,
          arch + ": attention.key_length " + u32_text(c.head_dim_k) + " must be kv_lora_rank + rope.dimension_count (" +
              u32_text(m.kv_lora_rank + m.rope_dim) + ")");
  require(c.head_dim_v == m.kv_lora_rank, arch + ": attention.value_length " + u32_text(c.head_dim_v) +
                                              " must be kv_lora_rank (" + u32_text(m.kv_lora_rank) + ")");
}

// deepseek2's experts: shared ones, leading dense layers, and the gating
// and weights the file states (llama.cpp's defaults where it states none:
// softmax, no renormalisation).
void read_expert_routing(const MetadataReader& md, ModelConfig& c) {
  const std::string arch(c.arch->name);
  c.n_expert_shared = md.u32("expert_shared_count").value_or(0);
  c.n_dense_lead = md.u32("leading_dense_block_count").value_or(0);
  require(c.n_dense_lead <= c.n_layer, arch + ": leading_dense_block_count " + u32_text(c.n_dense_lead) +
                                           " exceeds block_count " + u32_text(c.n_layer));
  if (c.n_dense_lead > 0) c.n_ff = md.required_u32("feed_forward_length");
  require(c.n_ff > 0, arch + ": feed_forward_length is zero");
  c.expert_weights_scale = md.f32("expert_weights_scale").value_or(1.0f);
  require(std::isfinite(c.expert_weights_scale) && c.expert_weights_scale > 0,
          arch + ": expert_weights_scale must be positive");
  c.expert_weights_norm = md.boolean("expert_weights_norm").value_or(false);
  // llama.cpp's numbering: 0 (none, as in V2 files) and 1 softmax, 2 sigmoid.
  const uint32_t gating = md.u32("expert_gating_func").value_or(0);
  require(gating <= 2, arch + ": expert_gating_func " + u32_text(gating) + " is not supported (1 softmax, 2 sigmoid)");
  c.expert_gating = gating == 2 ? ExpertGating::Sigmoid : ExpertGating::Softmax;
  // Group-limited routing (DeepSeek V3's n_group/topk_group) changes which
  // experts may be chosen; lamina does not implement it.
  const uint32_t groups = md.u32("expert_group_count").value_or(1);
  const uint32_t groups_used = md.u32("expert_group_used_count").value_or(groups);
  require(groups <= 1 || groups_used >= groups,
          arch + ": group-limited expert routing (expert_group_count " + u32_text(groups) + ", expert_group_used_count " +
              u32_text(groups_used) + ") is not supported");
}

}  // namespace

ModelConfig load_config(const gguf::GgufFile& file) {
  const std::string arch_name = file.architecture();
  if (arch_name.empty()) throw ModelError("missing metadata key 'general.architecture'");
  ModelConfig c;
  c.arch = find_arch(arch_name);
  if (!c.arch)
    throw ModelError("unknown architecture '" + arch_name + "' (supported: " + std::string(supported_archs()) + ")");
  const MetadataReader md(file, arch_name);

  c.n_layer = md.required_u32("block_count");
  c.n_embd = md.required_u32("embedding_length");
  c.n_head = md.required_u32("attention.head_count");
  c.n_head_kv = md.u32("attention.head_count_kv").value_or(c.n_head);
  c.n_ctx_train = md.u32("context_length").value_or(0);
  require(c.n_layer > 0 && c.n_embd > 0 && c.n_head > 0 && c.n_head_kv > 0,
          arch_name + ": block_count, embedding_length and head counts must be positive");
  require(c.n_head % c.n_head_kv == 0, arch_name + ": attention.head_count " + std::to_string(c.n_head) +
                                           " is not a multiple of head_count_kv " + std::to_string(c.n_head_kv));
  c.head_dim_k = md.u32("attention.key_length").value_or(c.n_embd / c.n_head);
  c.head_dim_v = md.u32("attention.value_length").value_or(c.head_dim_k);
  require(c.head_dim_k > 0 && c.head_dim_v > 0, arch_name + ": head dimension is zero");
  c.n_vocab = vocab_size(file, md);
  require(c.n_vocab > 0, "vocabulary is empty");

  const bool moe = c.arch->ffn == FfnKind::MoeGatedSilu ||
                   (c.arch->experts_optional && md.u32("expert_count").value_or(0) > 0);
  if (moe) {
    c.n_expert = md.required_u32("expert_count");
    c.n_expert_used = md.required_u32("expert_used_count");
    require(c.n_expert > 0, arch_name + ": expert_count must be positive");
    require(c.n_expert_used > 0 && c.n_expert_used <= c.n_expert,
            arch_name + ": expert_used_count " + std::to_string(c.n_expert_used) + " must be in 1..expert_count (" +
                std::to_string(c.n_expert) + ")");
    // Mixtral-style llama files give the expert width as feed_forward_length.
    const auto expert_ff = md.u32("expert_feed_forward_length");
    c.n_ff_expert = expert_ff ? *expert_ff : md.required_u32("feed_forward_length");
    require(c.n_ff_expert > 0, arch_name + ": the expert feed-forward width is zero");
    c.n_ff = md.u32("feed_forward_length").value_or(c.n_ff_expert);
    if (c.arch->latent_attention) read_expert_routing(md, c);
  } else {
    c.n_ff = md.required_u32("feed_forward_length");
  }

  if (c.arch->norm == NormKind::Layer) {
    auto eps = md.f32("attention.layer_norm_epsilon");
    if (!eps) throw ModelError("missing metadata key '" + arch_name + ".attention.layer_norm_epsilon'");
    c.norm_eps = *eps;
  } else {
    auto eps = md.f32("attention.layer_norm_rms_epsilon");
    if (!eps) throw ModelError("missing metadata key '" + arch_name + ".attention.layer_norm_rms_epsilon'");
    c.norm_eps = *eps;
  }
  require(std::isfinite(c.norm_eps) && c.norm_eps >= 0, arch_name + ": norm epsilon is not a finite non-negative number");

  c.rope.kind = c.arch->rope;
  if (c.rope.kind != RopeKind::None) {
    c.rope.n_dims = md.u32("rope.dimension_count").value_or(c.head_dim_k);
    require(c.rope.n_dims % 2 == 0 && c.rope.n_dims <= c.head_dim_k,
            arch_name + ": rope.dimension_count " + std::to_string(c.rope.n_dims) +
                " must be even and at most the head dimension " + std::to_string(c.head_dim_k));
    c.rope.freq_base = md.f32("rope.freq_base").value_or(10000.0f);
    require(c.rope.freq_base > 0, arch_name + ": rope.freq_base must be positive");
    const auto scaling = md.str("rope.scaling.type").value_or("none");
    const auto factor = md.f32("rope.scaling.factor").value_or(0.0f);
    if (scaling == "linear" && factor > 0) {
      c.rope.freq_scale = 1.0f / factor;
    } else if (scaling == "yarn") {
      read_yarn(md, c, factor);
    } else if (scaling != "none" && scaling != "linear" && scaling != "llama3") {
      // llama3-style scaling arrives as rope_freqs.weight; others are not supported.
      throw ModelError(arch_name + ": rope scaling '" + scaling + "' is not supported");
    }
    c.rope.has_freq_factors = file.find_tensor("rope_freqs.weight") != nullptr;
    // gemma3 files without the key get llama.cpp's default local base.
    const float swa_default = c.arch->sliding_window_layers == WindowLayers::Pattern ? 10000.0f : 0.0f;
    c.rope.freq_base_swa = md.f32("rope.freq_base_swa").value_or(swa_default);
    require(std::isfinite(c.rope.freq_base_swa) && c.rope.freq_base_swa >= 0,
            arch_name + ": rope.freq_base_swa must be positive");
  }

  c.attn_softcap = md.f32("attn_logit_softcapping").value_or(0.0f);
  c.final_softcap = md.f32("final_logit_softcapping").value_or(0.0f);
  if (c.arch->sliding_window_layers != WindowLayers::None)
    c.sliding_window = md.u32("attention.sliding_window").value_or(0);
  if (c.arch->sliding_window_layers == WindowLayers::Pattern) {
    // llama.cpp's default period where the key is absent (real Gemma 3 files).
    c.sliding_window_pattern = md.u32("attention.sliding_window_pattern").value_or(6);
    require(c.sliding_window_pattern > 0, arch_name + ": attention.sliding_window_pattern must be positive");
  }
  if (c.arch->latent_attention) read_latent_attention(md, c);
  c.attn_scale = md.f32("attention.scale").value_or(0.0f);
  if (c.attn_scale == 0.0f) c.attn_scale = 1.0f / std::sqrt(static_cast<float>(default_scale_width(c)));
  if (c.latent_attention() && c.rope.yarn_orig_ctx > 0 && !md.f32("attention.scale")) {
    // YaRN's attention temperature, as llama.cpp applies it to deepseek2:
    // scores times mscale^2 with mscale = 1 + yarn_log_multiplier * ln(factor).
    const float log_mul = md.f32("rope.scaling.yarn_log_multiplier").value_or(0.0f);
    const float mscale = 1.0f + log_mul * std::log(1.0f / c.rope.freq_scale);
    c.attn_scale *= mscale * mscale;
  }
  require(std::isfinite(c.attn_scale) && c.attn_scale > 0, arch_name + ": attention.scale must be positive");
  return c;
}

}  // namespace lamina::model
