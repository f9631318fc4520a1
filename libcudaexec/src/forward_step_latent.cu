// The attention block of multi-head latent attention (DeepSeek V2/V3) in its
// absorbed form, with the CPU path's products at the CPU path's points: per
// head, the query's nope part quantized for attn_k_b and the weighted latent
// for attn_v_b (libmodel/src/cpu/latent_attention.cc), so both quantize the
// same activations.
#include "forward_step.h"
#include "latent_attention.h"

namespace lamina::cudaexec::detail {

void ForwardStep::per_head_product(const DeviceMatrix& w, uint32_t first_row, uint32_t n_out, uint32_t head_rows,
                                   const void* act, std::size_t act_stride, std::size_t act_head_bytes, uint32_t n,
                                   float* y, std::size_t y_stride, std::size_t y_head, cudaStream_t stream) {
  const std::size_t row_bytes = quant::row_bytes(w.format, w.n_in);
  MatmulArgs a = weight_product(w);
  a.w = static_cast<const std::byte*>(w.data) + std::size_t{first_row} * row_bytes;
  a.n_out = n_out;
  a.act = act;
  a.act_stride = act_stride;
  a.n_rows = n;
  a.y = y;
  a.y_stride = y_stride;
  a.n_batch = m_.n_head;
  a.w_batch_bytes = std::size_t{head_rows} * row_bytes;
  a.act_batch_bytes = act_head_bytes;
  a.y_batch_stride = y_head;
  matmul(a, stream);
}

const float* ForwardStep::latent_attention_block(uint32_t layer, uint32_t n, uint32_t n_spans, const double2* rope,
                                                 cudaStream_t stream) {
  const DeviceLayer& l = w_.layers[layer];
  const model::LatentAttentionConfig& a = m_.mla;
  const uint32_t H = m_.n_head, rope_dim = a.rope_dim, nope = a.nope_dim, lora = a.kv_lora_rank;
  const uint32_t key = lora + rope_dim, q_head = nope + rope_dim;
  // Per row: every head's latent query [rotated q_pe; K_b[h]^T q_nope], then
  // the key [rotated k_pe; c], whose last kv_lora values are the value.
  const std::size_t F = std::size_t{H + 1} * key;
  float* q = b_.qkv;
  float* k = b_.qkv + std::size_t{H} * key;
  float* q_nope = b_.mla_heads;  // [n][H][nope]

  linear(l.wkv_a, b_.h, n, b_.mla_a, key, nullptr, nullptr, stream);
  norm_rows(NormKind::Rms, b_.mla_a, key, nullptr, l.kv_a_norm, nullptr, m_.norm_eps, lora, n, k + rope_dim, F,
            false, stream);
  copy_rows(b_.mla_a + lora, key, nullptr, rope_dim, n, k, F, stream);
  const float* q_in = b_.h;
  if (l.wq_a) {
    linear(l.wq_a, b_.h, n, b_.mla_a, a.q_lora_rank, nullptr, nullptr, stream);
    norm_rows(NormKind::Rms, b_.mla_a, a.q_lora_rank, nullptr, l.q_a_norm, nullptr, m_.norm_eps, a.q_lora_rank, n,
              b_.mla_q_a, a.q_lora_rank, false, stream);
    forget_activations();
    q_in = b_.mla_q_a;
  }
  // wq's rows per head, the rotated ones first (device_weights): those
  // straight into the head's latent query, the others beside.
  const void* q_act = quantized_input(l.wq, q_in, n, stream);
  const std::size_t q_act_stride = activation_row_stride(activation_format(l.wq.format), l.wq.n_in);
  per_head_product(l.wq, 0, rope_dim, q_head, q_act, q_act_stride, 0, n, q, F, key, stream);
  per_head_product(l.wq, rope_dim, nope, q_head, q_act, q_act_stride, 0, n, q_nope, std::size_t{H} * nope, nope,
                   stream);

  // Each head's query into the latent space: attn_k_b[h] (nope -> kv_lora) q_nope.
  forget_activations();
  const void* nope_act = quantized_input(l.wk_b, q_nope, n * H, stream);
  const std::size_t nope_stride = activation_row_stride(activation_format(l.wk_b.format), nope);
  per_head_product(l.wk_b, 0, lora, lora, nope_act, H * nope_stride, nope_stride, n, q + rope_dim, F, key, stream);
  forget_activations();

  const QkvShape shape{H, 1, key, 0, rope_dim, m_.rope.kind, m_.norm_eps};
  prepare_qkv(shape, q, k, k, F, n, nullptr, nullptr, rope, b_.pos, b_.seq, kv_, layer, stream);
  const uint32_t window = m_.layer_uses_window(layer) ? m_.sliding_window : 0;
  const AttentionShape attention{H, 1, key, lora, m_.attn_scale, 0.0f, window, nullptr};
  float* latent = b_.attn_out;  // [n][H][kv_lora]
  latent_attention(attention, kv_, layer, q, F, b_.seq, b_.pos, n, n_spans, b_.attention, latent,
                   std::size_t{H} * lora, stream);

  // Each head's weighted latent through attn_v_b[h] (kv_lora -> value).
  const void* latent_act = quantized_input(l.wv_b, latent, n * H, stream);
  const std::size_t latent_stride = activation_row_stride(activation_format(l.wv_b.format), lora);
  float* heads = b_.mla_heads;
  per_head_product(l.wv_b, 0, a.value_dim, a.value_dim, latent_act, H * latent_stride, latent_stride, n, heads,
                   std::size_t{H} * a.value_dim, a.value_dim, stream);
  forget_activations();
  return heads;
}

}  // namespace lamina::cudaexec::detail
