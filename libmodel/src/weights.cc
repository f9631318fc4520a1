#include "lamina/model/weights.h"

#include <string>

#include "lamina/quant/reference.h"

namespace lamina::model {
namespace {

std::string shape_text(const gguf::TensorInfo& t) {
  std::string s = "[";
  for (uint32_t d = 0; d < t.n_dims; ++d) s += (d ? ", " : "") + std::to_string(t.ne[d]);
  return s + "]";
}

class Binder {
 public:
  Binder(const gguf::GgufFile& file, Weights& w) : file_(file), w_(w) {}

  // A matrix [n_in, n_out] (or [n_in, n_out, n_expert]); absent -> empty when optional.
  Matrix matrix(const std::string& name, uint32_t n_in, uint32_t n_out, bool required = true,
                uint32_t n_expert = 1) {
    const gguf::TensorInfo* t = file_.find_tensor(name);
    if (!t) {
      if (required) throw ModelError("missing tensor '" + name + "'");
      return {};
    }
    const uint32_t want_dims = n_expert > 1 ? 3 : 2;
    if (t->n_dims > want_dims || t->ne[0] != n_in || t->ne[1] != n_out || t->ne[2] != n_expert || t->ne[3] != 1)
      throw ModelError("tensor '" + name + "' has shape " + shape_text(*t) + ", expected [" + std::to_string(n_in) +
                       ", " + std::to_string(n_out) + (n_expert > 1 ? ", " + std::to_string(n_expert) : "") + "]");
    const auto format = quant::format_from_id(static_cast<uint32_t>(t->type));
    if (!format || !quant::format_traits(*format).is_weight_format)
      throw ModelError("tensor '" + name + "': type " + std::string(gguf::tensor_type_name(t->type)) +
                       " is not supported for weights");
    Matrix m;
    m.format = *format;
    m.data = t->data.data();
    m.n_in = n_in;
    m.n_out = n_out;
    m.n_expert = n_expert;
    m.row_bytes = quant::row_bytes(*format, n_in);
    return m;
  }

  // A 1-D F32 parameter of length n (or `rows` such rows, [n, rows]: one per
  // expert); other float types are converted once.
  Vector vector(const std::string& name, uint32_t n, bool required = true, uint32_t rows = 1) {
    const gguf::TensorInfo* t = file_.find_tensor(name);
    if (!t) {
      if (required) throw ModelError("missing tensor '" + name + "'");
      return {};
    }
    if (t->n_elements != uint64_t{n} * rows || t->ne[0] != n || t->ne[1] != rows)
      throw ModelError("tensor '" + name + "' has shape " + shape_text(*t) + ", expected [" + std::to_string(n) +
                       (rows > 1 ? ", " + std::to_string(rows) : "") + "]");
    n *= rows;
    if (t->type == gguf::TensorType::F32) return {reinterpret_cast<const float*>(t->data.data()), n};
    const auto format = quant::format_from_id(static_cast<uint32_t>(t->type));
    if (!format || quant::format_traits(*format).block_elems != 1)
      throw ModelError("tensor '" + name + "': type " + std::string(gguf::tensor_type_name(t->type)) +
                       " is not supported for a 1-D parameter");
    auto owned = std::make_unique<float[]>(n);
    quant::dequantize_row_ref(*format, t->data.data(), owned.get(), n);
    Vector v{owned.get(), n};
    w_.converted.push_back(std::move(owned));
    return v;
  }

 private:
  const gguf::GgufFile& file_;
  Weights& w_;
};

// deepseek2's tensors, in llama.cpp's split layout (attn_k_b, attn_v_b).
void bind_latent_attention(Binder& b, const ModelConfig& c, const std::string& p, LayerWeights& l) {
  const LatentAttentionConfig& m = c.mla;
  const uint32_t q_width = c.n_head * m.q_head_dim();
  if (m.q_lora_rank > 0) {
    l.wq_a = b.matrix(p + "attn_q_a.weight", c.n_embd, m.q_lora_rank);
    l.q_a_norm = b.vector(p + "attn_q_a_norm.weight", m.q_lora_rank);
    l.wq_b = b.matrix(p + "attn_q_b.weight", m.q_lora_rank, q_width);
  } else {
    l.wq = b.matrix(p + "attn_q.weight", c.n_embd, q_width);
  }
  l.wkv_a = b.matrix(p + "attn_kv_a_mqa.weight", c.n_embd, m.kv_lora_rank + m.rope_dim);
  l.kv_a_norm = b.vector(p + "attn_kv_a_norm.weight", m.kv_lora_rank);
  l.wk_b = b.matrix(p + "attn_k_b.weight", m.nope_dim, m.kv_lora_rank, true, c.n_head);
  l.wv_b = b.matrix(p + "attn_v_b.weight", m.kv_lora_rank, m.value_dim, true, c.n_head);
  l.wo = b.matrix(p + "attn_output.weight", c.n_head * m.value_dim, c.n_embd);
}

void bind_attention(Binder& b, const ModelConfig& c, const std::string& p, LayerWeights& l) {
  if (c.latent_attention()) return bind_latent_attention(b, c, p, l);
  const uint32_t qd = c.q_dim(), kd = c.k_dim(), vd = c.v_dim();
  if (c.arch->qkv == Layout::Fused) {
    l.wqkv = b.matrix(p + "attn_qkv.weight", c.n_embd, qd + kd + vd);
    l.bqkv = b.vector(p + "attn_qkv.bias", qd + kd + vd, false);
  } else {
    l.wq = b.matrix(p + "attn_q.weight", c.n_embd, qd);
    l.wk = b.matrix(p + "attn_k.weight", c.n_embd, kd);
    l.wv = b.matrix(p + "attn_v.weight", c.n_embd, vd);
    l.bq = b.vector(p + "attn_q.bias", qd, false);
    l.bk = b.vector(p + "attn_k.bias", kd, false);
    l.bv = b.vector(p + "attn_v.bias", vd, false);
  }
  if (c.arch->qk_norm) {
    l.q_norm = b.vector(p + "attn_q_norm.weight", c.head_dim_k);
    l.k_norm = b.vector(p + "attn_k_norm.weight", c.head_dim_k);
  }
  l.wo = b.matrix(p + "attn_output.weight", c.n_head * c.head_dim_v, c.n_embd);
  l.bo = b.vector(p + "attn_output.bias", c.n_embd, false);
  if (c.arch->post_norms) l.post_attn_norm = b.vector(p + "post_attention_norm.weight", c.n_embd);
  if (c.arch->attention_sinks) l.attn_sinks = b.vector(p + "attn_sinks.weight", c.n_head);
}

void bind_ffn(Binder& b, const ModelConfig& c, uint32_t layer, const std::string& p, LayerWeights& l) {
  switch (c.ffn(layer)) {
    case FfnKind::MoeGatedSilu:
      l.router = b.matrix(p + "ffn_gate_inp.weight", c.n_embd, c.n_expert);
      l.expert_selection_bias = b.vector(p + "exp_probs_b.bias", c.n_expert, false);
      l.gate_exps = b.matrix(p + "ffn_gate_exps.weight", c.n_embd, c.n_ff_expert, true, c.n_expert);
      l.up_exps = b.matrix(p + "ffn_up_exps.weight", c.n_embd, c.n_ff_expert, true, c.n_expert);
      l.down_exps = b.matrix(p + "ffn_down_exps.weight", c.n_ff_expert, c.n_embd, true, c.n_expert);
      if (c.arch->expert_activation == ExpertActivation::SwigluOai) {
        l.router_bias = b.vector(p + "ffn_gate_inp.bias", c.n_expert);
        l.gate_exps_bias = b.vector(p + "ffn_gate_exps.bias", c.n_ff_expert, true, c.n_expert);
        l.up_exps_bias = b.vector(p + "ffn_up_exps.bias", c.n_ff_expert, true, c.n_expert);
        l.down_exps_bias = b.vector(p + "ffn_down_exps.bias", c.n_embd, true, c.n_expert);
      }
      if (c.n_expert_shared > 0) {
        const uint32_t shared = c.n_ff_shared();
        l.gate_shexp = b.matrix(p + "ffn_gate_shexp.weight", c.n_embd, shared);
        l.up_shexp = b.matrix(p + "ffn_up_shexp.weight", c.n_embd, shared);
        l.down_shexp = b.matrix(p + "ffn_down_shexp.weight", shared, c.n_embd);
      }
      return;
    case FfnKind::Gelu:
      l.w_up = b.matrix(p + "ffn_up.weight", c.n_embd, c.n_ff);
      l.b_up = b.vector(p + "ffn_up.bias", c.n_ff, false);
      break;
    case FfnKind::GatedSilu:
    case FfnKind::GatedGelu:
      if (c.arch->gate_up == Layout::Fused) {
        l.w_up = b.matrix(p + "ffn_up.weight", c.n_embd, 2 * c.n_ff);
      } else {
        l.w_gate = b.matrix(p + "ffn_gate.weight", c.n_embd, c.n_ff);
        l.w_up = b.matrix(p + "ffn_up.weight", c.n_embd, c.n_ff);
      }
      break;
  }
  l.w_down = b.matrix(p + "ffn_down.weight", c.n_ff, c.n_embd);
  l.b_down = b.vector(p + "ffn_down.bias", c.n_embd, false);
  if (c.arch->post_norms) l.post_ffn_norm = b.vector(p + "post_ffw_norm.weight", c.n_embd);
}

}  // namespace

Weights bind_weights(const gguf::GgufFile& file, const ModelConfig& c) {
  Weights w;
  Binder b(file, w);
  const bool layer_norm = c.arch->norm == NormKind::Layer;
  w.token_embd = b.matrix("token_embd.weight", c.n_embd, c.n_vocab);
  if (c.arch->learned_positions) {
    const auto* pos = file.find_tensor("position_embd.weight");
    if (!pos) throw ModelError("missing tensor 'position_embd.weight'");
    w.position_embd = b.matrix("position_embd.weight", c.n_embd, static_cast<uint32_t>(pos->ne[1]));
  }
  w.output_norm = b.vector("output_norm.weight", c.n_embd);
  if (layer_norm) w.output_norm_bias = b.vector("output_norm.bias", c.n_embd, false);
  w.output = c.arch->always_tied_output ? Matrix{} : b.matrix("output.weight", c.n_embd, c.n_vocab, false);
  if (!w.output) w.output = w.token_embd;
  if (c.rope.has_freq_factors) w.rope_freqs = b.vector("rope_freqs.weight", c.rope.n_dims / 2);

  w.layers.resize(c.n_layer);
  for (uint32_t i = 0; i < c.n_layer; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    LayerWeights& l = w.layers[i];
    l.attn_norm = b.vector(p + "attn_norm.weight", c.n_embd);
    if (layer_norm) l.attn_norm_bias = b.vector(p + "attn_norm.bias", c.n_embd, false);
    bind_attention(b, c, p, l);
    l.ffn_norm = b.vector(p + std::string(c.arch->ffn_norm_name) + ".weight", c.n_embd);
    if (layer_norm) l.ffn_norm_bias = b.vector(p + "ffn_norm.bias", c.n_embd, false);
    bind_ffn(b, c, i, p, l);
  }
  return w;
}

}  // namespace lamina::model
