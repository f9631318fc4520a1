// Multi-head latent attention (DeepSeek V2/V3), in its absorbed form.
//
// Per position one latent c = RMSNorm(W_kv_a x)[:kv_lora] and one rotated
// k_pe are shared by all heads; head h's key is [K_b[h] c; k_pe] and its
// value V_b[h] c. Since q_nope . (K_b[h] c) = (K_b[h]^T q_nope) . c, each
// query is moved into the latent space once, attention runs there with one
// "KV head" [c; k_pe], and V_b[h] is applied to the weighted sum of latents.
// The cache then holds kv_lora + rope values per position and layer (576
// for DeepSeek-V2-Lite, against 16 heads x (192 + 128) expanded); the value
// rows are the first kv_lora of each key row (KvCache::values_in_keys).
// llama.cpp runs the same form. apps/bench/NOTES.md has the measurement
// against the expanded form.
#pragma once

#include <span>

#include "attention.h"
#include "lamina/model/forward.h"
#include "lamina/model/kv_cache.h"
#include "lamina/model/weights.h"
#include "linear.h"
#include "ops.h"

namespace lamina::model::cpu {

// Runs on the forward pass's cache, products, attention and threads, for
// batches of up to max_batch tokens.
class LatentAttention {
 public:
  struct Parts {
    KvCache& cache;
    Linear& linear;
    Attention& attention;
    quant::ThreadPool& pool;
  };
  LatentAttention(const ModelConfig& config, const Parts& parts, std::size_t max_batch);

  // h: the normed input [n][n_embd]; cos_t / sin_t: per token, rope_dim / 2
  // pairs. Stores each token's [c; k_pe] in the cache and writes the heads'
  // values, out [n][n_head * value_dim], before attn_output.
  void run(const LayerWeights& l, uint32_t layer, std::span<const TokenInput> batch, const float* h,
           const double* cos_t, const double* sin_t, float* out);

 private:
  const ModelConfig& c_;
  Parts parts_;
  Workspace q_a_, q_, kv_, q_latent_, latent_out_, head_in_, head_out_;
};

}  // namespace lamina::model::cpu
