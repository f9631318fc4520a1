#include "expert_routing.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace lamina::model::cpu {

void route_experts(const float* logits_all, std::size_t n_tokens, uint32_t n_expert, uint32_t n_used,
                   uint32_t* order, int32_t* chosen, float* weights) {
  const uint32_t E = n_expert, K = n_used;
  for (std::size_t t = 0; t < n_tokens; ++t) {
    const float* logits = logits_all + t * E;
    const float max_logit = *std::max_element(logits, logits + E);
    double sum = 0.0;
    for (uint32_t e = 0; e < E; ++e) sum += std::exp(static_cast<double>(logits[e] - max_logit));
    std::iota(order, order + E, 0u);
    // Highest probability first; the lower id wins ties.
    std::partial_sort(order, order + K, order + E, [&](uint32_t a, uint32_t b) {
      return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
    });
    double chosen_sum = 0.0;
    for (uint32_t r = 0; r < K; ++r) {
      const double p = std::exp(static_cast<double>(logits[order[r]] - max_logit)) / sum;
      chosen[t * K + r] = static_cast<int32_t>(order[r]);
      weights[t * K + r] = static_cast<float>(p);
      chosen_sum += p;
    }
    for (uint32_t r = 0; r < K; ++r) weights[t * K + r] = static_cast<float>(weights[t * K + r] / chosen_sum);
  }
}

}  // namespace lamina::model::cpu
