#include "reference_model.h"

#include <array>
#include <stdexcept>
#include <string>

#include "lamina/quant/reference.h"

namespace lamina::model::reference {
namespace {

using gguf::GgufFile;
using gguf::TensorInfo;

// One row per supported architecture. Columns: norm, rope, ffn, activation,
// then the optional features by name.
const std::array<ArchTraits, 10> kArchitectures = {{
    {.name = "llama", .norm = NormKind::Rms, .rope = RopeKind::Norm,
     .ffn = FfnKind::Gated, .activation = Activation::Silu},
    {.name = "qwen2", .norm = NormKind::Rms, .rope = RopeKind::Neox,
     .ffn = FfnKind::Gated, .activation = Activation::Silu},
    {.name = "qwen3", .norm = NormKind::Rms, .rope = RopeKind::Neox,
     .ffn = FfnKind::Gated, .activation = Activation::Silu, .qk_norm = true},
    {.name = "qwen3moe", .norm = NormKind::Rms, .rope = RopeKind::Neox,
     .ffn = FfnKind::MixtureOfExperts, .activation = Activation::Silu, .qk_norm = true},
    {.name = "phi3", .norm = NormKind::Rms, .rope = RopeKind::Neox,
     .ffn = FfnKind::GatedFused, .activation = Activation::Silu, .fused_qkv = true},
    {.name = "gpt2", .norm = NormKind::Layer, .rope = RopeKind::None,
     .ffn = FfnKind::Plain, .activation = Activation::Gelu, .fused_qkv = true,
     .learned_positions = true},
    {.name = "gemma2", .norm = NormKind::Rms, .rope = RopeKind::Neox,
     .ffn = FfnKind::Gated, .activation = Activation::Gelu, .post_norms = true,
     .scale_embeddings = true, .sliding_window_on_even_layers = true},
    {.name = "gemma3", .norm = NormKind::Rms, .rope = RopeKind::Neox,
     .ffn = FfnKind::Gated, .activation = Activation::Gelu, .qk_norm = true, .post_norms = true,
     .scale_embeddings = true, .sliding_window_pattern = true},
    {.name = "gpt-oss", .norm = NormKind::Rms, .rope = RopeKind::Neox,
     .ffn = FfnKind::MixtureOfExperts, .activation = Activation::Silu,
     .sliding_window_on_even_layers = true, .attention_sinks = true, .oai_experts = true,
     .ffn_norm = "post_attention_norm"},
    {.name = "deepseek2", .norm = NormKind::Rms, .rope = RopeKind::Norm,
     .ffn = FfnKind::MixtureOfExperts, .activation = Activation::Silu, .latent_attention = true},
}};

// Metadata lookups under the architecture's prefix.
class Hparams {
 public:
  Hparams(const GgufFile& file, std::string_view arch) : file_(file), prefix_(arch) {}

  uint32_t u32(std::string_view key) const { return file_.get_u32(full(key)); }
  uint32_t u32_or(std::string_view key, uint32_t fallback) const {
    return file_.contains(full(key)) ? u32(key) : fallback;
  }
  double f32(std::string_view key) const { return file_.get_f32(full(key)); }
  double f32_or(std::string_view key, double fallback) const {
    return file_.contains(full(key)) ? f32(key) : fallback;
  }

 private:
  std::string full(std::string_view key) const { return prefix_ + "." + std::string(key); }
  const GgufFile& file_;
  std::string prefix_;
};

void require(bool ok, const std::string& message) {
  if (!ok) throw std::runtime_error(message);
}

// Dequantizes `rows` rows of `cols` values starting at row `first`.
Matrix dequantize_rows(const TensorInfo& t, size_t first, size_t rows) {
  const auto format = quant::format_from_id(static_cast<uint32_t>(t.type));
  require(format.has_value(), "tensor " + t.name + ": type not supported by libquant");
  Matrix m;
  m.rows = rows;
  m.cols = t.ne[0];
  m.format = *format;
  m.values.resize(rows * m.cols);
  const size_t row_bytes = quant::row_bytes(*format, m.cols);
  for (size_t r = 0; r < rows; ++r) {
    quant::dequantize_row_ref(*format, t.data.data() + (first + r) * row_bytes,
                              m.values.data() + r * m.cols, m.cols);
  }
  return m;
}

class WeightLoader {
 public:
  explicit WeightLoader(const GgufFile& file) : file_(file) {}

  // A 2-D weight with the given shape [cols, rows].
  Matrix matrix(const std::string& name, size_t cols, size_t rows) const {
    const TensorInfo& t = file_.tensor(name);
    require(t.n_dims == 2 && t.ne[0] == cols && t.ne[1] == rows,
            "tensor " + name + ": expected shape [" + std::to_string(cols) + ", " +
                std::to_string(rows) + "]");
    return dequantize_rows(t, 0, rows);
  }

  // A 1-D weight of n values; empty if `optional` and absent.
  Vector vector(const std::string& name, size_t n, bool optional = false) const {
    const TensorInfo* t = file_.find_tensor(name);
    if (t == nullptr && optional) return {};
    require(t != nullptr, "missing tensor " + name);
    require(t->n_elements == n, "tensor " + name + ": expected " + std::to_string(n) + " values");
    return dequantize_rows(*t, 0, 1).values;
  }

  // The per-expert rows of a 2-D bias [n, n_expert].
  std::vector<Vector> expert_biases(const std::string& name, size_t n, size_t n_expert) const {
    const TensorInfo& t = file_.tensor(name);
    require(t.n_dims == 2 && t.ne[0] == n && t.ne[1] == n_expert, "tensor " + name + ": unexpected bias shape");
    const Matrix all = dequantize_rows(t, 0, n_expert);
    std::vector<Vector> out;
    for (size_t e = 0; e < n_expert; ++e) out.emplace_back(all.row(e), all.row(e) + n);
    return out;
  }

  // The per-expert matrices of a 3-D tensor [cols, rows, n_expert].
  std::vector<Matrix> experts(const std::string& name, size_t cols, size_t rows,
                              size_t n_expert) const {
    const TensorInfo& t = file_.tensor(name);
    require(t.n_dims == 3 && t.ne[0] == cols && t.ne[1] == rows && t.ne[2] == n_expert,
            "tensor " + name + ": unexpected expert shape");
    std::vector<Matrix> out;
    for (size_t e = 0; e < n_expert; ++e) out.push_back(dequantize_rows(t, e * rows, rows));
    return out;
  }

  bool has(const std::string& name) const { return file_.find_tensor(name) != nullptr; }

 private:
  const GgufFile& file_;
};

void load_latent_attention(const WeightLoader& w, const ModelConfig& c, const std::string& p, LayerWeights& l) {
  l.wkv_a = w.matrix(p + "attn_kv_a_mqa.weight", c.n_embd, c.kv_lora_rank + c.n_rot);
  l.kv_a_norm = w.vector(p + "attn_kv_a_norm.weight", c.kv_lora_rank);
  l.k_b = w.experts(p + "attn_k_b.weight", c.nope_dim, c.kv_lora_rank, c.n_head);
  l.v_b = w.experts(p + "attn_v_b.weight", c.kv_lora_rank, c.value_dim, c.n_head);
  l.wo = w.matrix(p + "attn_output.weight", size_t{c.n_head} * c.value_dim, c.n_embd);
  // Queries: straight, or through the rank-q_lora_rank bottleneck (V2/V3 full).
  const size_t q_width = size_t{c.n_head} * (c.nope_dim + c.n_rot);
  if (c.q_lora_rank == 0) {
    l.wq = w.matrix(p + "attn_q.weight", c.n_embd, q_width);
    return;
  }
  l.wq_a = w.matrix(p + "attn_q_a.weight", c.n_embd, c.q_lora_rank);
  l.q_a_norm = w.vector(p + "attn_q_a_norm.weight", c.q_lora_rank);
  l.wq_b = w.matrix(p + "attn_q_b.weight", c.q_lora_rank, q_width);
}

LayerWeights load_layer(const WeightLoader& w, const ModelConfig& c, uint32_t il) {
  const std::string p = "blk." + std::to_string(il) + ".";
  const ArchTraits& a = c.arch;
  const size_t q_width = size_t{c.n_head} * c.head_dim_k;
  const size_t k_width = size_t{c.n_head_kv} * c.head_dim_k;
  const size_t v_width = size_t{c.n_head_kv} * c.head_dim_v;
  const size_t value_width = size_t{c.n_head} * c.head_dim_v;
  const bool layer_norm = a.norm == NormKind::Layer;

  LayerWeights l;
  l.attn_norm = w.vector(p + "attn_norm.weight", c.n_embd);
  l.attn_norm_bias = w.vector(p + "attn_norm.bias", c.n_embd, !layer_norm);
  if (a.latent_attention) {
    load_latent_attention(w, c, p, l);
  } else if (a.fused_qkv) {
    l.wqkv = w.matrix(p + "attn_qkv.weight", c.n_embd, q_width + k_width + v_width);
    l.bqkv = w.vector(p + "attn_qkv.bias", q_width + k_width + v_width, true);
  } else {
    l.wq = w.matrix(p + "attn_q.weight", c.n_embd, q_width);
    l.wk = w.matrix(p + "attn_k.weight", c.n_embd, k_width);
    l.wv = w.matrix(p + "attn_v.weight", c.n_embd, v_width);
    l.bq = w.vector(p + "attn_q.bias", q_width, true);
    l.bk = w.vector(p + "attn_k.bias", k_width, true);
    l.bv = w.vector(p + "attn_v.bias", v_width, true);
  }
  if (!a.latent_attention) {
    l.wo = w.matrix(p + "attn_output.weight", value_width, c.n_embd);
    l.bo = w.vector(p + "attn_output.bias", c.n_embd, true);
  }
  if (a.qk_norm) {
    l.q_norm = w.vector(p + "attn_q_norm.weight", c.head_dim_k);
    l.k_norm = w.vector(p + "attn_k_norm.weight", c.head_dim_k);
  }
  if (a.post_norms) {
    l.post_attention_norm = w.vector(p + "post_attention_norm.weight", c.n_embd);
    l.post_ffw_norm = w.vector(p + "post_ffw_norm.weight", c.n_embd);
  }

  l.ffn_norm = w.vector(p + std::string(a.ffn_norm) + ".weight", c.n_embd);
  if (a.attention_sinks) l.attn_sinks = w.vector(p + "attn_sinks.weight", c.n_head);
  l.ffn_norm_bias = w.vector(p + "ffn_norm.bias", c.n_embd, !layer_norm);
  const bool dense_lead = il < c.n_dense_lead;
  switch (dense_lead ? FfnKind::Gated : a.ffn) {
    case FfnKind::Gated:
      l.ffn_gate = w.matrix(p + "ffn_gate.weight", c.n_embd, c.n_ff);
      l.ffn_up = w.matrix(p + "ffn_up.weight", c.n_embd, c.n_ff);
      l.ffn_down = w.matrix(p + "ffn_down.weight", c.n_ff, c.n_embd);
      break;
    case FfnKind::GatedFused:
      l.ffn_up = w.matrix(p + "ffn_up.weight", c.n_embd, 2 * size_t{c.n_ff});
      l.ffn_down = w.matrix(p + "ffn_down.weight", c.n_ff, c.n_embd);
      break;
    case FfnKind::Plain:
      l.ffn_up = w.matrix(p + "ffn_up.weight", c.n_embd, c.n_ff);
      l.ffn_down = w.matrix(p + "ffn_down.weight", c.n_ff, c.n_embd);
      break;
    case FfnKind::MixtureOfExperts:
      l.router = w.matrix(p + "ffn_gate_inp.weight", c.n_embd, c.n_expert);
      l.expert_gate = w.experts(p + "ffn_gate_exps.weight", c.n_embd, c.n_ff_expert, c.n_expert);
      l.expert_up = w.experts(p + "ffn_up_exps.weight", c.n_embd, c.n_ff_expert, c.n_expert);
      l.expert_down = w.experts(p + "ffn_down_exps.weight", c.n_ff_expert, c.n_embd, c.n_expert);
      if (a.oai_experts) {
        l.router_bias = w.vector(p + "ffn_gate_inp.bias", c.n_expert);
        l.expert_gate_bias = w.expert_biases(p + "ffn_gate_exps.bias", c.n_ff_expert, c.n_expert);
        l.expert_up_bias = w.expert_biases(p + "ffn_up_exps.bias", c.n_ff_expert, c.n_expert);
        l.expert_down_bias = w.expert_biases(p + "ffn_down_exps.bias", c.n_embd, c.n_expert);
      }
      l.expert_bias = w.vector(p + "exp_probs_b.bias", c.n_expert, true);
      if (c.n_expert_shared > 0) {
        const size_t width = size_t{c.n_ff_expert} * c.n_expert_shared;
        l.shexp_gate = w.matrix(p + "ffn_gate_shexp.weight", c.n_embd, width);
        l.shexp_up = w.matrix(p + "ffn_up_shexp.weight", c.n_embd, width);
        l.shexp_down = w.matrix(p + "ffn_down_shexp.weight", width, c.n_embd);
      }
      break;
  }
  l.ffn_up_bias = w.vector(p + "ffn_up.bias", c.n_ff, true);
  l.ffn_down_bias = w.vector(p + "ffn_down.bias", c.n_embd, true);
  return l;
}

}  // namespace

const ArchTraits& arch_traits(std::string_view arch) {
  for (const ArchTraits& a : kArchitectures) {
    if (a.name == arch) return a;
  }
  throw std::runtime_error("unknown architecture '" + std::string(arch) + "'");
}

ModelConfig read_config(const GgufFile& file) {
  const std::string arch = file.architecture();
  ModelConfig c;
  c.arch = arch_traits(arch);
  const Hparams h(file, arch);
  c.n_layer = h.u32("block_count");
  c.n_embd = h.u32("embedding_length");
  c.n_ff = h.u32("feed_forward_length");
  c.n_head = h.u32("attention.head_count");
  c.n_head_kv = h.u32_or("attention.head_count_kv", c.n_head);
  require(c.n_head > 0 && c.n_head_kv > 0 && c.n_head % c.n_head_kv == 0,
          arch + ": head_count must be a multiple of head_count_kv");
  c.head_dim_k = h.u32_or("attention.key_length", c.n_embd / c.n_head);
  c.head_dim_v = h.u32_or("attention.value_length", c.n_embd / c.n_head);
  c.n_ctx_train = h.u32("context_length");
  c.norm_eps = c.arch.norm == NormKind::Rms ? h.f32("attention.layer_norm_rms_epsilon")
                                            : h.f32("attention.layer_norm_epsilon");
  if (c.arch.rope != RopeKind::None) {
    c.rope_base = h.f32_or("rope.freq_base", 10000.0);
    c.n_rot = h.u32_or("rope.dimension_count", c.head_dim_k);
    require(c.n_rot % 2 == 0 && c.n_rot <= c.head_dim_k,
            arch + ": rope.dimension_count must be even and at most the head size");
  }
  c.attn_softcap = h.f32_or("attn_logit_softcapping", 0.0);
  c.final_softcap = h.f32_or("final_logit_softcapping", 0.0);
  if (c.arch.sliding_window_on_even_layers || c.arch.sliding_window_pattern)
    c.sliding_window = h.u32("attention.sliding_window");
  if (c.arch.sliding_window_pattern) {
    c.window_period = h.u32_or("attention.sliding_window_pattern", 6);
    c.rope_base_swa = h.f32_or("rope.freq_base_swa", 10000.0);  // llama.cpp's gemma3 default
  }
  const std::string scaling = file.contains(std::string(arch) + ".rope.scaling.type")
                                  ? file.get_string(std::string(arch) + ".rope.scaling.type")
                                  : "none";
  if (scaling == "linear") c.rope_scale = 1.0 / h.f32("rope.scaling.factor");
  if (scaling == "yarn") {
    c.yarn_factor = h.f32("rope.scaling.factor");
    c.yarn_orig_ctx = h.u32("rope.scaling.original_context_length");
    c.yarn_log_multiplier = h.f32_or("rope.scaling.yarn_log_multiplier", 0.0);
  }
  // llama.cpp's llama loader switches to experts when expert_count > 0
  // (Mixtral), whose width is then feed_forward_length.
  if (c.arch.name == "llama" && h.u32_or("expert_count", 0) > 0) c.arch.ffn = FfnKind::MixtureOfExperts;
  if (c.arch.ffn == FfnKind::MixtureOfExperts) {
    c.n_expert = h.u32("expert_count");
    c.n_expert_used = h.u32("expert_used_count");
    c.n_ff_expert = h.u32_or("expert_feed_forward_length", c.n_ff);
    require(c.n_expert_used > 0 && c.n_expert_used <= c.n_expert,
            arch + ": expert_used_count must be in 1..expert_count");
  }
  if (c.arch.latent_attention) {
    c.q_lora_rank = h.u32_or("attention.q_lora_rank", 0);
    c.kv_lora_rank = h.u32("attention.kv_lora_rank");
    c.nope_dim = h.u32("attention.key_length_mla") - c.n_rot;
    c.value_dim = h.u32("attention.value_length_mla");
    c.n_expert_shared = h.u32_or("expert_shared_count", 0);
    c.n_dense_lead = h.u32_or("leading_dense_block_count", 0);
    c.expert_weights_scale = h.f32_or("expert_weights_scale", 1.0);
    const std::string norm_key = std::string(arch) + ".expert_weights_norm";
    c.expert_weights_norm = file.contains(norm_key) && file.get_bool(norm_key);
    c.sigmoid_gating = h.u32_or("expert_gating_func", 1) == 2;
  }
  const TensorInfo& embd = file.tensor("token_embd.weight");
  require(embd.n_dims == 2 && embd.ne[0] == c.n_embd, "token_embd.weight: row length is not n_embd");
  c.n_vocab = static_cast<uint32_t>(embd.ne[1]);
  return c;
}

ModelWeights load_weights(const GgufFile& file, const ModelConfig& c) {
  const WeightLoader w(file);
  ModelWeights m;
  m.token_embd = w.matrix("token_embd.weight", c.n_embd, c.n_vocab);
  if (c.arch.learned_positions) {
    const TensorInfo& pos = file.tensor("position_embd.weight");
    m.position_embd = w.matrix("position_embd.weight", c.n_embd, pos.ne[1]);
  }
  m.output_norm = w.vector("output_norm.weight", c.n_embd);
  m.output_norm_bias = w.vector("output_norm.bias", c.n_embd, c.arch.norm != NormKind::Layer);
  m.output = w.has("output.weight") ? w.matrix("output.weight", c.n_embd, c.n_vocab) : m.token_embd;
  if (w.has("rope_freqs.weight")) m.rope_freqs = w.vector("rope_freqs.weight", c.n_rot / 2);
  for (uint32_t il = 0; il < c.n_layer; ++il) m.layers.push_back(load_layer(w, c, il));
  return m;
}

}  // namespace lamina::model::reference
