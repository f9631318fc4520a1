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
  // What the executor has no place for is refused here, by name, rather
  // than run into wrong logits.
  if (c.rope.freq_base_swa > 0)
    throw ModelError(std::string(a.name) + ": the GPU executor has no second RoPE base for the sliding-window " +
                     "layers (rope.freq_base_swa); run this model on the CPU");
  cudaexec::ModelDesc d;
  d.norm = a.norm == NormKind::Rms ? cudaexec::NormKind::Rms : cudaexec::NormKind::Layer;
  d.rope = c.rope.kind == RopeKind::None   ? cudaexec::RopeKind::None
           : c.rope.kind == RopeKind::Norm ? cudaexec::RopeKind::Norm
                                           : cudaexec::RopeKind::Neox;
  const FfnKind ffn = c.ffn();
  d.ffn = ffn == FfnKind::GatedSilu      ? cudaexec::FfnKind::GatedSilu
          : ffn == FfnKind::GatedGelu    ? cudaexec::FfnKind::GatedGelu
          : ffn == FfnKind::MoeGatedSilu ? cudaexec::FfnKind::MoeGatedSilu
                                         : cudaexec::FfnKind::Gelu;
  d.n_expert = c.n_expert;
  d.n_expert_used = c.n_expert_used;
  d.n_ff_expert = c.n_ff_expert;
  d.route_experts = host.route_experts;
  d.n_layer = c.n_layer;
  d.n_embd = c.n_embd;
  d.n_head = c.n_head;
  d.n_head_kv = c.n_head_kv;
  d.head_dim_k = c.head_dim_k;
  d.head_dim_v = c.head_dim_v;
  d.n_ff = c.n_ff;
  d.n_vocab = c.n_vocab;
  d.norm_eps = c.norm_eps;
  d.rope_dims = c.rope.n_dims;
  d.rope_base = c.rope.freq_base;
  d.rope_freq_scale = c.rope.freq_scale;
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
  d.rope_freqs = vector(w.rope_freqs);
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
    g.sliding_window = c.layer_uses_window(i) ? c.sliding_window : 0;
  }
  return d;
}

}  // namespace lamina::model::gpu
