#include "model_desc.h"

#include <cmath>

namespace lamina::model::gpu {
namespace {

cudaexec::HostMatrix matrix(const Matrix& m) {
  if (!m) return {};
  return {m.format, m.data, m.n_in, m.n_out, m.n_expert};
}

cudaexec::HostVector vector(const Vector& v) { return {v.data, v.n}; }

}  // namespace

cudaexec::ModelDesc describe_for_gpu(const Model& model, bool exact_activations, const backend::Host& host) {
  const ModelConfig& c = model.config();
  const Weights& w = model.weights();
  const ArchSpec& a = *c.arch;
  cudaexec::ModelDesc d;
  d.norm = a.norm == NormKind::Rms ? cudaexec::NormKind::Rms : cudaexec::NormKind::Layer;
  d.rope = c.rope.kind == RopeKind::None   ? cudaexec::RopeKind::None
           : c.rope.kind == RopeKind::Norm ? cudaexec::RopeKind::Norm
                                           : cudaexec::RopeKind::Neox;
  const FfnKind ffn = c.ffn();
  d.ffn = ffn == FfnKind::GatedSilu      ? cudaexec::FfnKind::GatedSilu
          : ffn == FfnKind::GatedGelu    ? cudaexec::FfnKind::GatedGelu
          : ffn == FfnKind::MoeGatedSilu ? (a.expert_activation == ExpertActivation::SwigluOai
                                                ? cudaexec::FfnKind::MoeSwigluOai
                                                : cudaexec::FfnKind::MoeGatedSilu)
                                         : cudaexec::FfnKind::Gelu;
  d.n_expert = c.n_expert;
  d.n_expert_used = c.n_expert_used;
  d.n_ff_expert = c.n_ff_expert;
  d.routing = {c.expert_gating == ExpertGating::Sigmoid ? cudaexec::ExpertGating::Sigmoid
                                                        : cudaexec::ExpertGating::Softmax,
               c.expert_weights_norm, c.expert_weights_scale};
  d.n_layer = c.n_layer;
  d.n_embd = c.n_embd;
  d.n_head = c.n_head;
  d.n_head_kv = c.n_head_kv;
  d.head_dim_k = c.head_dim_k;
  d.head_dim_v = c.head_dim_v;
  if (c.latent_attention()) {
    // Run absorbed: one shared key row [k_pe; c] per position (see LatentAttentionDesc).
    const LatentAttentionConfig& m = c.mla;
    d.mla = {m.q_lora_rank, m.kv_lora_rank, m.nope_dim, m.rope_dim, m.value_dim};
    d.n_head_kv = 1;
    d.head_dim_k = m.kv_lora_rank + m.rope_dim;
    d.head_dim_v = m.kv_lora_rank;
  }
  d.n_ff = c.n_ff;
  d.n_vocab = c.n_vocab;
  d.norm_eps = c.norm_eps;
  d.rope_dims = c.rope.n_dims;
  d.rope_inv_freq = host.rope_inverse_frequencies(c, w, false);
  d.rope_inv_freq_local = host.rope_inverse_frequencies(c, w, true);
  d.rope_magnitude = host.rope_magnitude(c);
  d.attn_scale = c.attn_scale;
  d.attn_softcap = c.attn_softcap;
  d.final_softcap = c.final_softcap;
  d.embed_scale = a.scale_embeddings ? std::sqrt(static_cast<float>(c.n_embd)) : 1.0f;
  d.gelu_f16_table = exact_activations ? nullptr : host.gelu_f16_table();

  d.token_embd = matrix(w.token_embd);
  d.position_embd = matrix(w.position_embd);
  d.output = matrix(w.output);
  d.output_norm = vector(w.output_norm);
  d.output_norm_bias = vector(w.output_norm_bias);
  d.layers.resize(c.n_layer);
  for (uint32_t i = 0; i < c.n_layer; ++i) {
    const LayerWeights& l = w.layers[i];
    cudaexec::LayerDesc& g = d.layers[i];
    g.attn_norm = vector(l.attn_norm);
    g.attn_norm_bias = vector(l.attn_norm_bias);
    g.wq = matrix(l.wq);
    g.wk = matrix(l.wk);
    g.wv = matrix(l.wv);
    g.wqkv = matrix(l.wqkv);
    g.bq = vector(l.bq);
    g.bk = vector(l.bk);
    g.bv = vector(l.bv);
    g.bqkv = vector(l.bqkv);
    g.q_norm = vector(l.q_norm);
    g.k_norm = vector(l.k_norm);
    g.wo = matrix(l.wo);
    g.bo = vector(l.bo);
    g.post_attn_norm = vector(l.post_attn_norm);
    g.ffn_norm = vector(l.ffn_norm);
    g.ffn_norm_bias = vector(l.ffn_norm_bias);
    g.w_gate = matrix(l.w_gate);
    g.w_up = matrix(l.w_up);
    g.w_down = matrix(l.w_down);
    g.b_up = vector(l.b_up);
    g.b_down = vector(l.b_down);
    g.post_ffn_norm = vector(l.post_ffn_norm);
    g.router = matrix(l.router);
    g.gate_exps = matrix(l.gate_exps);
    g.up_exps = matrix(l.up_exps);
    g.down_exps = matrix(l.down_exps);
    g.router_bias = vector(l.router_bias);
    g.gate_exps_bias = vector(l.gate_exps_bias);
    g.up_exps_bias = vector(l.up_exps_bias);
    g.down_exps_bias = vector(l.down_exps_bias);
    g.attn_sinks = vector(l.attn_sinks);
    g.expert_selection_bias = vector(l.expert_selection_bias);
    g.gate_shexp = matrix(l.gate_shexp);
    g.up_shexp = matrix(l.up_shexp);
    g.down_shexp = matrix(l.down_shexp);
    g.dense_ffn = c.ffn(i) != c.ffn();
    g.wq_a = matrix(l.wq_a);
    g.wq_b = matrix(l.wq_b);
    g.wkv_a = matrix(l.wkv_a);
    g.wk_b = matrix(l.wk_b);
    g.wv_b = matrix(l.wv_b);
    g.q_a_norm = vector(l.q_a_norm);
    g.kv_a_norm = vector(l.kv_a_norm);
    g.sliding_window = c.layer_uses_window(i) ? c.sliding_window : 0;
    g.rope_local = c.layer_uses_swa_rope(i);
  }
  return d;
}

}  // namespace lamina::model::gpu
