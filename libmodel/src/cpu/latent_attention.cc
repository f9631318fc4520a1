#include "latent_attention.h"

#include <algorithm>

namespace lamina::model::cpu {

LatentAttention::LatentAttention(const ModelConfig& config, const Parts& parts, std::size_t max_batch)
    : c_(config), parts_(parts) {
  if (!config.latent_attention()) return;
  const LatentAttentionConfig& m = config.mla;
  const std::size_t B = max_batch, H = config.n_head;
  const std::size_t latent_k = std::size_t{m.kv_lora_rank} + m.rope_dim;
  q_a_.resize(B * m.q_lora_rank);
  q_.resize(B * H * m.q_head_dim());
  kv_.resize(B * latent_k);
  q_latent_.resize(B * H * latent_k);
  latent_out_.resize(B * H * m.kv_lora_rank);
  head_in_.resize(B * std::max(m.nope_dim, m.kv_lora_rank));
  head_out_.resize(B * std::max(m.kv_lora_rank, m.value_dim));
}

void LatentAttention::run(const LayerWeights& l, uint32_t layer, std::span<const TokenInput> batch, const float* h,
                          const double* cos_t, const double* sin_t, float* out) {
  const LatentAttentionConfig& m = c_.mla;
  Linear& linear = parts_.linear;
  const std::size_t n = batch.size(), H = c_.n_head;
  const std::size_t qhd = m.q_head_dim(), latent_k = std::size_t{m.kv_lora_rank} + m.rope_dim;
  const std::size_t half = m.rope_dim / 2;

  if (l.wq_a) {
    linear.apply_shared({{&l.wq_a, q_a_.data()}, {&l.wkv_a, kv_.data()}}, h, n);
    for (std::size_t t = 0; t < n; ++t) {
      float* row = q_a_.data() + t * m.q_lora_rank;
      rms_norm(row, l.q_a_norm.data, c_.norm_eps, m.q_lora_rank, row);
    }
    linear.apply(l.wq_b, q_a_.data(), n, q_.data());
  } else {
    linear.apply_shared({{&l.wq, q_.data()}, {&l.wkv_a, kv_.data()}}, h, n);
  }

  // [c; k_pe] per token: the latent normed, k_pe rotated; into the cache.
  for (std::size_t t = 0; t < n; ++t) {
    float* row = kv_.data() + t * latent_k;
    rms_norm(row, l.kv_a_norm.data, c_.norm_eps, m.kv_lora_rank, row);
    rope_head(row + m.kv_lora_rank, c_.rope.kind, m.rope_dim, cos_t + t * half, sin_t + t * half);
    parts_.cache.store_k(batch[t].seq, layer, batch[t].pos, row);
    for (std::size_t hd = 0; hd < H; ++hd)
      rope_head(q_.data() + (t * H + hd) * qhd + m.nope_dim, c_.rope.kind, m.rope_dim, cos_t + t * half,
                sin_t + t * half);
  }

  // Each head's queries into the latent space: [K_b[h]^T q_nope; q_pe].
  // attn_k_b is stored [nope -> kv_lora] per head, the transposed expansion.
  for (uint32_t hd = 0; hd < H; ++hd) {
    for (std::size_t t = 0; t < n; ++t) {
      const float* q_head = q_.data() + (t * H + hd) * qhd;
      std::copy_n(q_head, m.nope_dim, head_in_.data() + t * m.nope_dim);
      std::copy_n(q_head + m.nope_dim, m.rope_dim, q_latent_.data() + (t * H + hd) * latent_k + m.kv_lora_rank);
    }
    const Matrix k_b = l.wk_b.expert(hd);
    linear.apply(k_b, head_in_.data(), n, head_out_.data());
    for (std::size_t t = 0; t < n; ++t)
      std::copy_n(head_out_.data() + t * m.kv_lora_rank, m.kv_lora_rank, q_latent_.data() + (t * H + hd) * latent_k);
  }

  const AttentionShape shape{c_.n_head, 1, static_cast<uint32_t>(latent_k), m.kv_lora_rank, c_.attn_scale, 0.0f, 0};
  parts_.attention.run(shape, parts_.cache, layer, batch, q_latent_.data(), latent_out_.data(), parts_.pool);

  // Each head's weighted latent through its value expansion.
  for (uint32_t hd = 0; hd < H; ++hd) {
    for (std::size_t t = 0; t < n; ++t)
      std::copy_n(latent_out_.data() + (t * H + hd) * m.kv_lora_rank, m.kv_lora_rank,
                  head_in_.data() + t * m.kv_lora_rank);
    const Matrix v_b = l.wv_b.expert(hd);
    linear.apply(v_b, head_in_.data(), n, head_out_.data());
    for (std::size_t t = 0; t < n; ++t)
      std::copy_n(head_out_.data() + t * m.value_dim, m.value_dim, out + (t * H + hd) * m.value_dim);
  }
}

}  // namespace lamina::model::cpu
