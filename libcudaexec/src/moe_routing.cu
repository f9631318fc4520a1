// The step's mixture-of-experts routing and the grouping of rows per expert.
#include <algorithm>
#include <cfloat>
#include <string>

#include <cuda_fp16.h>

#include "launch.cuh"
#include "ops.h"

namespace lamina::cudaexec::detail {
namespace {

// One thread per token, in double: the definition of ExpertRouting (the CPU
// path's router computes the same values).
__global__ void route_experts_kernel(const float* logits, uint32_t n_tokens, uint32_t n_expert, uint32_t n_used,
                                     ExpertRouting rule, const float* selection_bias, int32_t* chosen,
                                     float* weights) {
  enter_dependent_kernel();
  const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n_tokens) return;
  const float* l = logits + std::size_t{t} * n_expert;
  double gate[kMaxExperts];
  if (rule.gating == ExpertGating::Softmax) {
    float max_logit = -FLT_MAX;
    for (uint32_t e = 0; e < n_expert; ++e) max_logit = fmaxf(max_logit, l[e]);
    double sum = 0.0;
    for (uint32_t e = 0; e < n_expert; ++e) sum += gate[e] = exp(static_cast<double>(__fsub_rn(l[e], max_logit)));
    for (uint32_t e = 0; e < n_expert; ++e) gate[e] /= sum;
  } else {
    for (uint32_t e = 0; e < n_expert; ++e) gate[e] = 1.0 / (1.0 + exp(-static_cast<double>(l[e])));
  }
  uint32_t taken[kMaxExperts / 32] = {};
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

// One block: thread e finds expert e's rows in (token, rank) order, after
// a prefix sum of the counts, so the grouping never depends on timing.
__global__ void group_expert_rows_kernel(const int32_t* chosen, const float* chosen_w, uint32_t n_slots,
                                         uint32_t n_used, uint32_t n_expert, uint32_t* first, int32_t* rows,
                                         int32_t* slots, float* weights) {
  __shared__ uint32_t start[kMaxExperts + 1];
  enter_dependent_kernel();
  for (uint32_t e = threadIdx.x; e < n_expert; e += blockDim.x) {
    uint32_t count = 0;
    for (uint32_t i = 0; i < n_slots; ++i) count += chosen[i] == static_cast<int32_t>(e);
    start[e + 1] = count;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    start[0] = 0;
    for (uint32_t e = 0; e < n_expert; ++e) start[e + 1] += start[e];
  }
  __syncthreads();
  for (uint32_t e = threadIdx.x; e <= n_expert; e += blockDim.x) first[e] = start[e];
  for (uint32_t e = threadIdx.x; e < n_expert; e += blockDim.x) {
    uint32_t at = start[e];
    for (uint32_t i = 0; i < n_slots; ++i)
      if (chosen[i] == static_cast<int32_t>(e)) {
        rows[at] = static_cast<int32_t>(i / n_used);
        slots[at] = static_cast<int32_t>(i);
        weights[at] = chosen_w[i];
        ++at;
      }
  }
}

}  // namespace

void group_expert_rows(const int32_t* chosen, const float* chosen_w, uint32_t n_tokens, uint32_t n_used,
                       uint32_t n_expert, uint32_t* first, int32_t* rows, int32_t* slots, float* weights,
                       cudaStream_t stream) {
  if (n_tokens == 0) return;
  if (n_expert > kMaxExperts) throw CudaError("group_expert_rows: at most 256 experts");
  launch_kernel(group_expert_rows_kernel, dim3(1), dim3(256), 0, stream, chosen, chosen_w, n_tokens * n_used, n_used,
                n_expert, first, rows, slots, weights);
}

void route_experts(const float* logits, uint32_t n_tokens, uint32_t n_expert, uint32_t n_used,
                   const ExpertRouting& rule, const float* selection_bias, int32_t* chosen, float* weights,
                   cudaStream_t stream) {
  if (n_tokens == 0) return;
  if (n_expert > kMaxExperts || n_used == 0 || n_used > n_expert)
    throw CudaError("route_experts: 1 <= n_expert_used <= n_expert <= " + std::to_string(kMaxExperts));
  constexpr uint32_t kBlock = 64;
  launch_kernel(route_experts_kernel, dim3((n_tokens + kBlock - 1) / kBlock), dim3(kBlock), 0, stream, logits,
                n_tokens, n_expert, n_used, rule, selection_bias, chosen, weights);
}

}  // namespace lamina::cudaexec::detail
