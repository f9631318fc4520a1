// The step's mixture-of-experts routing and latent-attention key assembly.
#include <algorithm>
#include <cfloat>
#include <string>

#include <cuda_fp16.h>

#include "launch.cuh"
#include "ops.h"

namespace lamina::cudaexec::detail {
namespace {

constexpr uint32_t kMaxRoutedExperts = 256;

// One thread per token, in double: the definition of ExpertRouting (the CPU
// path's router computes the same values).
__global__ void route_experts_kernel(const float* logits, uint32_t n_tokens, uint32_t n_expert, uint32_t n_used,
                                     ExpertRouting rule, const float* selection_bias, int32_t* chosen,
                                     float* weights) {
  enter_dependent_kernel();
  const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n_tokens) return;
  const float* l = logits + std::size_t{t} * n_expert;
  double gate[kMaxRoutedExperts];
  if (rule.gating == ExpertGating::Softmax) {
    float max_logit = -FLT_MAX;
    for (uint32_t e = 0; e < n_expert; ++e) max_logit = fmaxf(max_logit, l[e]);
    double sum = 0.0;
    for (uint32_t e = 0; e < n_expert; ++e) sum += gate[e] = exp(static_cast<double>(__fsub_rn(l[e], max_logit)));
    for (uint32_t e = 0; e < n_expert; ++e) gate[e] /= sum;
  } else {
    for (uint32_t e = 0; e < n_expert; ++e) gate[e] = 1.0 / (1.0 + exp(-static_cast<double>(l[e])));
  }
  uint32_t taken[kMaxRoutedExperts / 32] = {};
  double chosen_sum = 0.0;
  int32_t* my_chosen = chosen + std::size_t{t} * n_used;
  for (uint32_t r = 0; r < n_used; ++r) {
    // The highest selection value not taken yet; the lower id wins ties.
    int32_t best = -1;
    double best_value = 0.0;
    for (uint32_t e = 0; e < n_expert; ++e) {
      if ((taken[e / 32] >> (e % 32)) & 1u) continue;
      const double v = gate[e] + (selection_bias ? static_cast<double>(selection_bias[e]) : 0.0);
      if (best < 0 || v > best_value) {
        best = static_cast<int32_t>(e);
        best_value = v;
      }
    }
    taken[best / 32] |= 1u << (best % 32);
    my_chosen[r] = best;
    chosen_sum += gate[best];
  }
  for (uint32_t r = 0; r < n_used; ++r) {
    const double g = gate[my_chosen[r]];
    weights[std::size_t{t} * n_used + r] = static_cast<float>((rule.normalize ? g / chosen_sum : g) * rule.scale);
  }
}

// Row r, head h of K: [k_pe of row r (rope values); that head's expanded
// nope values], written at k + r * k_stride + h * (rope + nope).
__global__ void assemble_latent_keys_kernel(const float* kv_a, std::size_t kv_a_stride, uint32_t pe_offset,
                                            const float* k_nope, uint32_t n_head, uint32_t rope, uint32_t nope,
                                            float* k, std::size_t k_stride) {
  enter_dependent_kernel();
  const uint32_t r = blockIdx.y;
  const uint32_t head_dim = rope + nope;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n_head * head_dim; i += gridDim.x * blockDim.x) {
    const uint32_t h = i / head_dim, d = i % head_dim;
    k[r * k_stride + i] = d < rope ? kv_a[r * kv_a_stride + pe_offset + d]
                                   : k_nope[(std::size_t{r} * n_head + h) * nope + (d - rope)];
  }
}

__global__ void round_to_half_kernel(float* x, std::size_t stride, uint32_t n) {
  enter_dependent_kernel();
  float* row = x + blockIdx.y * stride;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    row[i] = __half2float(__float2half_rn(row[i]));
}

}  // namespace

void round_to_half(float* x, std::size_t stride, uint32_t n, uint32_t n_rows, cudaStream_t stream) {
  if (n_rows == 0) return;
  launch_kernel(round_to_half_kernel, dim3(std::min<uint32_t>((n + 255) / 256, 64), n_rows), dim3(256), 0, stream, x,
                stride, n);
}

void route_experts(const float* logits, uint32_t n_tokens, uint32_t n_expert, uint32_t n_used,
                   const ExpertRouting& rule, const float* selection_bias, int32_t* chosen, float* weights,
                   cudaStream_t stream) {
  if (n_tokens == 0) return;
  if (n_expert > kMaxRoutedExperts || n_used == 0 || n_used > n_expert)
    throw CudaError("route_experts: 1 <= n_expert_used <= n_expert <= " + std::to_string(kMaxRoutedExperts));
  constexpr uint32_t kBlock = 64;
  launch_kernel(route_experts_kernel, dim3((n_tokens + kBlock - 1) / kBlock), dim3(kBlock), 0, stream, logits,
                n_tokens, n_expert, n_used, rule, selection_bias, chosen, weights);
}

void assemble_latent_keys(const float* kv_a, std::size_t kv_a_stride, uint32_t pe_offset, const float* k_nope,
                          uint32_t n_head, uint32_t rope, uint32_t nope, uint32_t n_rows, float* k,
                          std::size_t k_stride, cudaStream_t stream) {
  if (n_rows == 0) return;
  const uint32_t n = n_head * (rope + nope);
  launch_kernel(assemble_latent_keys_kernel, dim3(std::min<uint32_t>((n + 255) / 256, 64), n_rows), dim3(256), 0,
                stream, kv_a, kv_a_stride, pe_offset, k_nope, n_head, rope, nope, k, k_stride);
}

}  // namespace lamina::cudaexec::detail
