// The router of a mixture of experts: for each token, the n_used most
// probable experts (lower id on ties) and their softmax probabilities
// renormalised over the chosen ones, computed in double. The CPU forward pass
// uses it, and hands it to the GPU executor so both choose alike.
#pragma once

#include <cstddef>
#include <cstdint>

namespace lamina::model::cpu {

// logits [n_tokens x n_expert]; order: scratch of n_expert entries;
// chosen / weights: [n_tokens x n_used], by rank.
void route_experts(const float* logits, std::size_t n_tokens, uint32_t n_expert, uint32_t n_used, uint32_t* order,
                   int32_t* chosen, float* weights);

}  // namespace lamina::model::cpu
