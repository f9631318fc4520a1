#include "expert_routing.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace lamina::model::cpu {

RoutingRule routing_rule(const ModelConfig& c, const float* bias) {
  return {.gating = c.expert_gating, .normalize = c.expert_weights_norm, .scale = c.expert_weights_scale, .bias = bias};
}

void route_experts(const float* logits_all, std::size_t n_tokens, uint32_t n_expert, uint32_t n_used,
                   const RoutingRule& rule, uint32_t* order, int32_t* chosen, float* weights) {
  const uint32_t E = n_expert, K = n_used;
  std::vector<double> gate(E), select(E);
  for (std::size_t t = 0; t < n_tokens; ++t) {
    const float* logits = logits_all + t * E;
    if (rule.gating == ExpertGating::Softmax) {
      const float max_logit = *std::max_element(logits, logits + E);
      double sum = 0.0;
      for (uint32_t e = 0; e < E; ++e) sum += gate[e] = std::exp(static_cast<double>(logits[e] - max_logit));
      for (uint32_t e = 0; e < E; ++e) gate[e] /= sum;
    } else {
      for (uint32_t e = 0; e < E; ++e) gate[e] = 1.0 / (1.0 + std::exp(-static_cast<double>(logits[e])));
    }
    for (uint32_t e = 0; e < E; ++e) select[e] = gate[e] + (rule.bias ? rule.bias[e] : 0.0);
    std::iota(order, order + E, 0u);
    // Highest first; the lower id wins ties.
    std::partial_sort(order, order + K, order + E, [&](uint32_t a, uint32_t b) {
      return select[a] > select[b] || (select[a] == select[b] && a < b);
    });
    double chosen_sum = 0.0;
    for (uint32_t r = 0; r < K; ++r) chosen_sum += gate[order[r]];
    for (uint32_t r = 0; r < K; ++r) {
      const double w = rule.normalize ? gate[order[r]] / chosen_sum : gate[order[r]];
      chosen[t * K + r] = static_cast<int32_t>(order[r]);
      weights[t * K + r] = static_cast<float>(w * rule.scale);
    }
  }
}

}  // namespace lamina::model::cpu
