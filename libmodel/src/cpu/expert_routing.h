// The router of a mixture of experts: for each token, the n_used experts
// with the highest gating values (plus a selection bias, where the model has
// one; lower id on ties) and their weights, computed in double. The CPU
// forward pass uses it; the GPU executor's router (cudaexec::ExpertRouting)
// computes the same.
#pragma once

#include <cstddef>
#include <cstdint>

#include "lamina/model/config.h"

namespace lamina::model::cpu {

struct RoutingRule {
  ExpertGating gating = ExpertGating::Softmax;  // gating values: softmax over all experts, or sigmoid
  bool normalize = true;        // the chosen weights divided by their sum
  float scale = 1.0f;           // then multiplied by this
  const float* bias = nullptr;  // [n_expert], added to the gating values for the choice only
};

// The rule a model's config states.
RoutingRule routing_rule(const ModelConfig& config, const float* bias);

// logits [n_tokens x n_expert]; order: scratch of n_expert entries;
// chosen / weights: [n_tokens x n_used], by rank.
void route_experts(const float* logits, std::size_t n_tokens, uint32_t n_expert, uint32_t n_used,
                   const RoutingRule& rule, uint32_t* order, int32_t* chosen, float* weights);

}  // namespace lamina::model::cpu
