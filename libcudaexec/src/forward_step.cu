// The decode step reads like the model: per layer
//   x += attention(norm(x));  x += ffn(norm(x))
// with the kernels behind names that say what they compute.
#include "forward_step.h"

#include <algorithm>

#include "matmul.h"
#include "nccl_library.h"

namespace lamina::cudaexec::detail {
namespace {

using model::FfnKind;

uint32_t q_dim(const AttentionShape& h) { return h.n_head * h.head_dim_k; }
uint32_t k_dim(const AttentionShape& h) { return h.n_head_kv * h.head_dim_k; }
uint32_t v_dim(const AttentionShape& h) { return h.n_head_kv * h.head_dim_v; }
uint32_t qkv_dim(const AttentionShape& h) { return q_dim(h) + k_dim(h) + v_dim(h); }
uint32_t ff_width(const model::ModelConfig& m) { return std::max({m.n_ff, m.n_ff_expert, m.n_ff_shared()}); }
// Gated FFNs may run gate and up as one product ([gate; up] per row).
uint32_t gate_width(const model::ModelConfig& m) {
  const bool gated = m.ffn() == FfnKind::GatedSilu || m.ffn() == FfnKind::GatedGelu;
  return gated ? std::max(2 * m.n_ff, ff_width(m)) : ff_width(m);
}

AttentionShape attention_shape(const model::ModelConfig& m, const AttentionShape& heads, uint32_t layer,
                               const DeviceLayer& d) {
  return {heads.n_head, heads.n_head_kv, heads.head_dim_k, heads.head_dim_v, m.attn_scale, m.attn_softcap,
          m.layer_uses_window(layer) ? m.sliding_window : 0, d.attn_sinks};
}

// A dense FFN's activation (SiLU or GELU, gated or not).
Activation dense_activation(FfnKind kind) { return kind == FfnKind::GatedSilu ? Activation::Silu : Activation::Gelu; }

}  // namespace

AttentionShape attention_heads(const model::ModelConfig& m) {
  if (!m.latent_attention()) return {m.n_head, m.n_head_kv, m.head_dim_k, m.head_dim_v};
  // Absorbed (latent_attention.h): one key row [k_pe; c], c the values.
  return {m.n_head, 1, m.mla.kv_lora_rank + m.mla.rope_dim, m.mla.kv_lora_rank};
}

StepBuffers layout_step_buffers(const model::ModelConfig& m, const ExecutorInputs& in, const StepSizes& s,
                                BumpLayout& layout) {
  const AttentionShape heads = attention_heads(m);
  StepBuffers b;
  const std::size_t R = s.max_rows, L = s.max_logit_rows;
  // ids, positions and slots back to back: one copy brings a batch over.
  uint32_t* meta = layout.take<uint32_t>(3 * R);
  b.ids = reinterpret_cast<int32_t*>(meta);
  b.pos = meta ? meta + R : nullptr;
  b.seq = meta ? meta + 2 * R : nullptr;
  b.out_rows = layout.take<int32_t>(L);
  b.tiles = layout.take<AttentionTile>(R);
  b.argmax = layout.take<int32_t>(L);
  b.x = layout.take<float>(R * m.n_embd);
  b.h = layout.take<float>(R * m.n_embd);
  b.qkv = layout.take<float>(R * qkv_dim(heads));
  b.attn_out = layout.take<float>(R * heads.n_head * heads.head_dim_v);
  b.proj = layout.take<float>(R * m.n_embd);
  b.gate = layout.take<float>(R * gate_width(m));
  b.up = layout.take<float>(R * ff_width(m));
  b.logits = layout.take<float>(L * (s.shard ? s.n_vocab : m.n_vocab));
  b.logits_local = b.logits;
  if (s.shard) {
    b.logits_local = layout.take<float>(L * m.n_vocab);
    b.logits_gathered = layout.take<float>(L * s.shard.n_ranks * m.n_vocab);
    b.tp_parts = layout.take<float>(s.shard.slices_per_rank() * R * m.n_embd);
    b.tp_gathered = layout.take<float>(kTensorSlices * R * m.n_embd);
  }
  b.attention = layout.take<float>(attention_workspace_floats(heads, s.max_rows, s.max_spans));
  // The widest activation row: f32 (the float formats) is the largest layout.
  // (Latent attention quantizes n_head rows per row, of nope and of kv_lora values.)
  const uint32_t max_in = std::max({m.n_embd, m.n_ff, heads.n_head * heads.head_dim_v, m.n_head * m.mla.nope_dim});
  // (A mixture quantizes n_expert_used rows per row, for its experts.)
  const std::size_t act_bytes =
      std::max(R * activation_row_stride(quant::QuantFormat::F32, max_in),
               R * m.n_expert_used * activation_row_stride(quant::QuantFormat::F32, std::max(m.n_embd, m.n_ff_expert)));
  // (A row-parallel product quantizes its slices as rows of their own.)
  const uint32_t per_rank = s.shard ? s.shard.slices_per_rank() : 1;
  const uint32_t max_slice = std::max(heads.n_head * heads.head_dim_v, m.n_ff) / per_rank;
  const std::size_t slice_act_bytes = R * per_rank * activation_row_stride(quant::QuantFormat::F32, max_slice);
  b.act[0] = layout.take<std::byte>(std::max(act_bytes, slice_act_bytes));
  b.act[1] = layout.take<std::byte>(std::max(act_bytes, slice_act_bytes));
  const uint32_t half = std::max<uint32_t>(1, m.rope.n_dims / 2);
  const bool local_rope = !in.rope_inv_freq_local.empty();
  b.inv_freq = layout.take<double>((local_rope ? 2 : 1) * half);
  b.rope = layout.take<double2>(R * half);
  b.rope_local = local_rope ? layout.take<double2>(R * half) : nullptr;
  b.argmax_parts = layout.take<ArgmaxCandidate>(L * kArgmaxParts);
  b.gelu_table = in.gelu_f16_table ? layout.take<uint16_t>(65536) : nullptr;
  if (m.n_expert > 0) {
    const std::size_t K = m.n_expert_used;
    b.moe_logits = layout.take<float>(R * m.n_expert);
    b.moe_first = layout.take<uint32_t>(m.n_expert + 1);
    b.moe_in = layout.take<float>(R * K * m.n_embd);
    b.moe_gate = layout.take<float>(R * K * m.n_ff_expert);
    b.moe_up = layout.take<float>(R * K * m.n_ff_expert);
    b.moe_down = layout.take<float>(R * K * m.n_embd);
    b.moe_out = layout.take<float>(R * K * m.n_embd);
    b.moe_weights = layout.take<float>(R * K);
    b.moe_rows = layout.take<int32_t>(R * K);
    b.moe_slots = layout.take<int32_t>(R * K);
    b.moe_chosen = layout.take<int32_t>(R * K);
    b.moe_chosen_w = layout.take<float>(R * K);
  }
  if (const model::LatentAttentionConfig& a = m.mla; m.latent_attention()) {
    b.mla_a = layout.take<float>(R * std::max(a.q_lora_rank, a.kv_lora_rank + a.rope_dim));
    b.mla_q_a = layout.take<float>(R * a.q_lora_rank);
    b.mla_heads = layout.take<float>(R * m.n_head * std::max(a.nope_dim, a.value_dim));
  }
  return b;
}

ForwardStep::ForwardStep(const model::ModelConfig& model, const ExecutorInputs& inputs, const DeviceWeights& weights,
                         const KvView& kv, const StepBuffers& buffers, LayerRange range, const TensorParallelComm* tp)
    : m_(model),
      in_(inputs),
      heads_(attention_heads(model)),
      w_(weights),
      kv_(kv),
      range_(range),
      b_(buffers),
      tp_(tp) {}

void ForwardStep::row_parallel(const DeviceMatrix& w, const float* x, uint32_t n, const float* bias,
                               const float* residual, float* out, cudaStream_t stream) {
  const uint32_t per_rank = tp_->shard.slices_per_rank(), E = m_.n_embd, slice = w.n_in;
  // Each row's slices as rows of their own: product i reads slice i of every row.
  const QuantFormat f = activation_format(w.format);
  const std::size_t slice_stride = activation_row_stride(f, slice);
  forget_activations();
  quantize_activations(f, x, slice, slice, n * per_rank, b_.act[0], stream);
  MatmulArgs a = weight_product(w);
  a.n_out = E;
  a.act = b_.act[0];
  a.act_stride = per_rank * slice_stride;
  a.n_rows = n;
  a.y = b_.tp_parts;
  a.y_stride = E;
  a.n_batch = per_rank;
  a.w_batch_bytes = std::size_t{E} * quant::row_bytes(w.format, slice);
  a.act_batch_bytes = slice_stride;
  a.y_batch_stride = std::size_t{n} * E;
  matmul(a, stream);
  const std::size_t count = std::size_t{per_rank} * n * E;
  const float* parts = b_.tp_parts;
  if (tp_->comm) {
    nccl_check(nccl().all_gather(b_.tp_parts, b_.tp_gathered, count, ncclFloat, tp_->comm, stream),
               "all-gather of a row-parallel product's slices");
    parts = b_.tp_gathered;
  }
  sum_terms(parts, kTensorSlices, E, std::size_t{n} * E, E, n, bias, residual, out, E, stream);
}

void ForwardStep::output_product(const DeviceMatrix& w, const float* x, uint32_t n, float* y, const float* bias,
                                 const float* residual, cudaStream_t stream) {
  if (tp_)
    row_parallel(w, x, n, bias, residual, y, stream);
  else
    linear(w, x, n, y, m_.n_embd, bias, residual, stream);
}

void ForwardStep::output_head(uint32_t n, cudaStream_t stream) {
  const uint32_t share = m_.n_vocab;  // the whole vocabulary without tensor parallelism
  linear(w_.output, b_.h, n, b_.logits_local, share, nullptr, nullptr, stream);
  if (tp_) {
    // Every rank's share, then side by side: row r of rank k's share is
    // columns [k * share, k * share + its rows) of row r.
    const uint32_t ranks = tp_->shard.n_ranks, V = tp_->n_vocab;
    const float* shares = b_.logits_local;
    if (tp_->comm) {
      nccl_check(nccl().all_gather(b_.logits_local, b_.logits_gathered, std::size_t{n} * share, ncclFloat, tp_->comm,
                                   stream),
                 "all-gather of the logits");
      shares = b_.logits_gathered;
    }
    for (uint32_t k = 0; k < ranks; ++k) {
      const uint32_t cols = std::min(V, (k + 1) * share) - k * share;
      LAMINA_CUDA_CHECK(cudaMemcpy2DAsync(b_.logits + std::size_t{k} * share, std::size_t{V} * sizeof(float),
                                          shares + std::size_t{k} * n * share, std::size_t{share} * sizeof(float),
                                          cols * sizeof(float), n, cudaMemcpyDeviceToDevice, stream));
    }
  }
  const uint32_t V = tp_ ? tp_->n_vocab : share;
  if (m_.final_softcap > 0.0f) softcap(b_.logits, std::size_t{n} * V, m_.final_softcap, stream);
}

void ForwardStep::moe_ffn(uint32_t layer, uint32_t n, cudaStream_t stream) {
  const DeviceLayer& l = w_.layers[layer];
  const uint32_t E = m_.n_expert, K = m_.n_expert_used, D = m_.n_embd, F = m_.n_ff_expert, NK = n * K;
  linear(l.router, b_.h, n, b_.moe_logits, E, l.router_bias, nullptr, stream);
  const ExpertRouting routing{m_.expert_gating, m_.expert_weights_norm, m_.expert_weights_scale};
  route_experts(b_.moe_logits, n, E, K, routing, l.expert_selection_bias, b_.moe_chosen, b_.moe_chosen_w, stream);
  // The n * K (token, expert) pairs grouped by expert on the device; each
  // expert's products then run on its rows in one grouped launch.
  group_expert_rows(b_.moe_chosen, b_.moe_chosen_w, n, K, E, b_.moe_first, b_.moe_rows, b_.moe_slots,
                    b_.moe_weights, stream);
  copy_rows(b_.h, D, b_.moe_rows, D, NK, b_.moe_in, D, stream);
  forget_activations();
  const auto experts = [&](const DeviceMatrix& w, const float* bias, const float* x, float* y) {
    MatmulArgs a = weight_product(w);
    a.act = quantized_input(w, x, NK, stream);
    a.n_rows = n;  // an expert takes each token at most once
    a.y = y;
    a.y_stride = w.n_out;
    a.bias = bias;
    a.n_batch = E;
    a.w_batch_bytes = std::size_t{w.n_out} * quant::row_bytes(w.format, w.n_in);
    a.bias_batch_stride = w.n_out;
    a.batch_rows = b_.moe_first;
    matmul(a, stream);
  };
  experts(l.gate_exps, l.gate_exps_bias, b_.moe_in, b_.moe_gate);
  experts(l.up_exps, l.up_exps_bias, b_.moe_in, b_.moe_up);
  const Activation act =
      m_.arch->expert_activation == model::ExpertActivation::SwigluOai ? Activation::SwigluOai : Activation::Silu;
  gated_activation(act, b_.moe_gate, b_.moe_up, F, F, NK, nullptr, b_.moe_gate, F, stream);
  forget_activations();
  experts(l.down_exps, l.down_exps_bias, b_.moe_gate, b_.moe_down);
  scatter_scaled_rows(b_.moe_down, D, b_.moe_slots, b_.moe_weights, D, NK, b_.moe_out, D, stream);
  forget_activations();
  sum_terms(b_.moe_out, K, std::size_t{K} * D, D, D, n, nullptr, nullptr, b_.proj, D, stream);
  if (l.gate_shexp) {
    const uint32_t S = l.gate_shexp.n_out;
    linear(l.gate_shexp, b_.h, n, b_.gate, S, nullptr, nullptr, stream);
    linear(l.up_shexp, b_.h, n, b_.up, S, nullptr, nullptr, stream);
    gated_activation(Activation::Silu, b_.gate, b_.up, S, S, n, nullptr, b_.gate, S, stream);
    forget_activations();
    linear(l.down_shexp, b_.gate, n, b_.proj, D, nullptr, b_.proj, stream);
  }
}

const void* ForwardStep::quantized_input(const DeviceMatrix& w, const float* x, uint32_t n_rows,
                                         cudaStream_t stream) {
  const quant::QuantFormat f = activation_format(w.format);
  for (int i = 0; i < 2; ++i)
    if (slots_[i].src == x && slots_[i].format == f) return b_.act[i];
  const uint32_t slot = next_slot_;
  next_slot_ ^= 1u;
  quantize_activations(f, x, w.n_in, w.n_in, n_rows, b_.act[slot], stream);
  slots_[slot] = {x, f};
  return b_.act[slot];
}

void ForwardStep::linear(const DeviceMatrix& w, const float* x, uint32_t n, float* y, std::size_t y_stride,
                         const float* bias, const float* residual, cudaStream_t stream) {
  MatmulArgs a = weight_product(w);
  a.act = quantized_input(w, x, n, stream);
  a.n_rows = n;
  a.y = y;
  a.y_stride = y_stride;
  a.bias = bias;
  a.residual = residual;
  matmul(a, stream);
}

void ForwardStep::norm_input(const DeviceMatrix& next, const float* w, const float* b, const int32_t* rows, uint32_t n,
                             cudaStream_t stream) {
  const uint32_t E = m_.n_embd;
  forget_activations();
  const quant::QuantFormat f = activation_format(next.format);
  const uint32_t slot = next_slot_;
  if (next.n_in == E &&
      norm_rows_quantized(m_.arch->norm, b_.x, E, rows, w, b, m_.norm_eps, E, n, b_.h, E, f, b_.act[slot], stream)) {
    next_slot_ ^= 1u;
    slots_[slot] = {b_.h, f};
    return;
  }
  norm_rows(m_.arch->norm, b_.x, E, rows, w, b, m_.norm_eps, E, n, b_.h, E, false, stream);
}

void ForwardStep::activate(Activation kind, const DeviceMatrix& next, const float* gate, const float* up,
                           std::size_t in_stride, float* out, uint32_t n, cudaStream_t stream) {
  const uint32_t ff = m_.n_ff;
  forget_activations();
  const quant::QuantFormat f = activation_format(next.format);
  const uint32_t slot = next_slot_;
  // The down projection reads only the quantized rows: `out` stays their
  // name among the activation slots, and its f32 rows are not written.
  if (!tp_ && next.n_in == ff && gated_activation_quantized(kind, gate, up, in_stride, ff, n, b_.gelu_table, nullptr, ff, f,
                                                    b_.act[slot], stream)) {
    next_slot_ ^= 1u;
    slots_[slot] = {out, f};
    return;
  }
  gated_activation(kind, gate, up, in_stride, ff, n, b_.gelu_table, out, ff, stream);
}

void ForwardStep::attention_block(uint32_t layer, uint32_t n, const AttentionPlan& launch, cudaStream_t stream) {
  const DeviceLayer& l = w_.layers[layer];
  const uint32_t E = m_.n_embd, F = qkv_dim(heads_), qd = q_dim(heads_), kd = k_dim(heads_);
  norm_input(l.wq_a ? l.wq_a : l.wqkv ? l.wqkv : l.wq, l.attn_norm, l.attn_norm_bias, nullptr, n, stream);
  const double2* rope = m_.layer_uses_swa_rope(layer) ? b_.rope_local : b_.rope;
  const float* heads = b_.attn_out;
  if (l.wkv_a) {
    heads = latent_attention_block(layer, n, launch.n_spans, rope, stream);
  } else {
    float* q = b_.qkv;
    float* k = b_.qkv + qd;
    float* v = b_.qkv + qd + kd;
    if (l.wqkv) {
      linear(l.wqkv, b_.h, n, q, F, l.bqkv, nullptr, stream);
    } else {
      linear(l.wq, b_.h, n, q, F, l.bq, nullptr, stream);
      linear(l.wk, b_.h, n, k, F, l.bk, nullptr, stream);
      linear(l.wv, b_.h, n, v, F, l.bv, nullptr, stream);
    }
    const QkvShape shape{heads_.n_head, heads_.n_head_kv, heads_.head_dim_k, heads_.head_dim_v, m_.rope.n_dims,
                         m_.rope.kind, m_.norm_eps};
    prepare_qkv(shape, q, k, v, F, n, l.q_norm, l.k_norm, rope, b_.pos, b_.seq, kv_, layer, stream);
    const std::size_t out_stride = std::size_t{heads_.n_head} * heads_.head_dim_v;
    attention(attention_shape(m_, heads_, layer, l), kv_, layer, q, F, b_.seq, b_.pos, b_.tiles, n, launch,
              b_.attention, b_.attn_out, out_stride, stream);
  }
  forget_activations();
  if (l.post_attn_norm) {
    output_product(l.wo, heads, n, b_.proj, l.bo, nullptr, stream);
    norm_rows(NormKind::Rms, b_.proj, E, nullptr, l.post_attn_norm, nullptr, m_.norm_eps, E, n, b_.x, E, true,
              stream);
  } else {
    output_product(l.wo, heads, n, b_.x, l.bo, b_.x, stream);
  }
}

void ForwardStep::ffn_block(uint32_t layer, uint32_t n, cudaStream_t stream) {
  const DeviceLayer& l = w_.layers[layer];
  const uint32_t E = m_.n_embd, ff = m_.n_ff;
  // A mixture's leading dense layers run a gated SiLU.
  const FfnKind kind = m_.ffn(layer);
  const bool experts = kind == FfnKind::MoeGatedSilu;
  const DeviceMatrix& first = experts ? l.router : l.w_gate ? l.w_gate : l.w_up;
  norm_input(first, l.ffn_norm, l.ffn_norm_bias, nullptr, n, stream);
  float* hidden = b_.gate;  // the input of the down projection, [n x ff]
  if (experts) {
    moe_ffn(layer, n, stream);
    add_rows(b_.x, E, b_.proj, E, E, n, stream);
    return;
  }
  if (kind == FfnKind::Gelu) {
    linear(l.w_up, b_.h, n, b_.up, ff, l.b_up, nullptr, stream);
    activate(dense_activation(kind), l.w_down, b_.up, nullptr, ff, hidden, n, stream);
  } else if (!l.w_gate) {
    // One product gives [gate; up] per row.
    const uint32_t width = 2 * ff;
    linear(l.w_up, b_.h, n, b_.gate, width, nullptr, nullptr, stream);
    hidden = b_.up;
    activate(dense_activation(kind), l.w_down, b_.gate, b_.gate + ff, width, hidden, n, stream);
  } else {
    linear(l.w_gate, b_.h, n, b_.gate, ff, nullptr, nullptr, stream);
    linear(l.w_up, b_.h, n, b_.up, ff, nullptr, nullptr, stream);
    activate(dense_activation(kind), l.w_down, b_.gate, b_.up, ff, hidden, n, stream);
  }
  if (l.post_ffn_norm) {
    output_product(l.w_down, hidden, n, b_.proj, l.b_down, nullptr, stream);
    norm_rows(NormKind::Rms, b_.proj, E, nullptr, l.post_ffn_norm, nullptr, m_.norm_eps, E, n, b_.x, E, true,
              stream);
  } else {
    output_product(l.w_down, hidden, n, b_.x, l.b_down, b_.x, stream);
  }
}

void ForwardStep::enqueue(uint32_t n, uint32_t n_logit_rows, const AttentionPlan& attention, cudaStream_t stream,
                          const std::function<void(int)>* after_layer, bool hidden_only) {
  const uint32_t E = m_.n_embd;
  forget_activations();
  if (range_.embeds()) {
    gather_rows(w_.token_embd.format, w_.token_embd.data, E, b_.ids, n, m_.embedding_scale(), b_.x, stream);
    if (w_.position_embd) {
      gather_rows(w_.position_embd.format, w_.position_embd.data, E, reinterpret_cast<const int32_t*>(b_.pos), n,
                  1.0f, b_.h, stream);
      add_rows(b_.x, E, b_.h, E, E, n, stream);
    }
  }
  if (m_.rope.kind != RopeKind::None) {
    const uint32_t half = m_.rope.n_dims / 2;
    rope_table(b_.inv_freq, b_.pos, n, half, in_.rope_magnitude, b_.rope, stream);
    if (b_.rope_local) rope_table(b_.inv_freq + half, b_.pos, n, half, 1.0, b_.rope_local, stream);
  }
  if (after_layer && range_.embeds()) (*after_layer)(-1);
  for (uint32_t layer = range_.first; layer < range_.end; ++layer) {
    attention_block(layer, n, attention, stream);
    ffn_block(layer, n, stream);
    if (after_layer) (*after_layer)(static_cast<int>(layer));
  }
  if (n_logit_rows == 0 || !range_.heads(m_)) return;
  norm_input(w_.output, w_.output_norm, w_.output_norm_bias, b_.out_rows, n_logit_rows, stream);
  if (hidden_only) return;
  output_head(n_logit_rows, stream);
}

}  // namespace lamina::cudaexec::detail
