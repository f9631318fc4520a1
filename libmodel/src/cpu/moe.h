// Mixture-of-experts FFN: a router (with gpt-oss's bias) picks the top
// experts per token, their gated outputs (SiLU, or gpt-oss's clamped SwiGLU
// with biases) are mixed with the router's weights (expert_routing.h), and
// the shared experts, where the model has some, are added.
#pragma once

#include <cstdint>
#include <vector>

#include "lamina/model/config.h"
#include "lamina/model/weights.h"

namespace lamina::model::cpu {

class Linear;

class MixtureOfExperts {
 public:
  MixtureOfExperts(const ModelConfig& config, uint32_t max_batch);
  // out[t] = sum over the token's chosen experts (in rank order) of
  // weight * down_e(silu(gate_e h) * up_e h), plus the shared experts' FFN.
  // Tokens choosing the same expert go through its matrices together.
  void run(const LayerWeights& l, const float* h, std::size_t n, float* out, Linear& linear);

 private:
  const ModelConfig& c_;
  std::vector<float> router_logits_;
  std::vector<uint32_t> order_;      // experts sorted by router logit
  std::vector<int32_t> chosen_;      // [n][n_used] expert ids, by rank
  std::vector<float> chosen_w_;      // [n][n_used]
  std::vector<uint32_t> rows_;       // tokens routed to the current expert
  std::vector<uint32_t> ranks_;      // their rank for that expert
  std::vector<float> in_, gate_, up_, down_;
  std::vector<float> shared_gate_, shared_up_;  // [n][n_ff_expert * n_expert_shared]
  std::vector<float> expert_out_;    // [n][n_used][n_embd]
};

}  // namespace lamina::model::cpu
