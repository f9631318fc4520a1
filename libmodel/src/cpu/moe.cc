#include "moe.h"

#include <algorithm>

#include "expert_routing.h"
#include "linear.h"
#include "ops.h"
#include "vector_kernels.h"

namespace lamina::model::cpu {

MixtureOfExperts::MixtureOfExperts(const ModelConfig& config, uint32_t max_batch) : c_(config) {
  if (config.n_expert == 0) return;
  const std::size_t B = max_batch;
  order_.resize(config.n_expert);
  router_logits_.resize(B * c_.n_expert);
  chosen_.resize(B * c_.n_expert_used);
  chosen_w_.resize(B * c_.n_expert_used);
  rows_.reserve(B);
  ranks_.reserve(B);
  in_.resize(B * c_.n_embd);
  gate_.resize(B * c_.n_ff_expert);
  up_.resize(B * c_.n_ff_expert);
  down_.resize(B * c_.n_embd);
  expert_out_.resize(B * c_.n_expert_used * c_.n_embd);
  shared_gate_.resize(B * c_.n_ff_expert * c_.n_expert_shared);
  shared_up_.resize(shared_gate_.size());
}

void MixtureOfExperts::run(const LayerWeights& l, const float* h, std::size_t n, float* out, Linear& linear) {
  const uint32_t E = c_.n_expert, K = c_.n_expert_used, D = c_.n_embd, F = c_.n_ff_expert;
  linear.apply(l.router, h, n, router_logits_.data());
  if (l.router_bias) {
    for (std::size_t t = 0; t < n; ++t) add_in_place(router_logits_.data() + t * E, l.router_bias.data, E);
  }

  const float* selection_bias = l.expert_selection_bias ? l.expert_selection_bias.data : nullptr;
  route_experts(router_logits_.data(), n, E, K, routing_rule(c_, selection_bias), order_.data(), chosen_.data(),
                chosen_w_.data());

  for (uint32_t e = 0; e < E; ++e) {
    rows_.clear();
    ranks_.clear();
    for (std::size_t t = 0; t < n; ++t) {
      for (uint32_t r = 0; r < K; ++r) {
        if (chosen_[t * K + r] == static_cast<int32_t>(e)) {
          rows_.push_back(static_cast<uint32_t>(t));
          ranks_.push_back(r);
        }
      }
    }
    if (rows_.empty()) continue;
    const std::size_t m = rows_.size();
    for (std::size_t i = 0; i < m; ++i) std::copy(h + rows_[i] * D, h + rows_[i] * D + D, in_.data() + i * D);
    const Matrix gate_e = l.gate_exps.expert(e), up_e = l.up_exps.expert(e), down_e = l.down_exps.expert(e);
    linear.apply_shared({{&gate_e, gate_.data()}, {&up_e, up_.data()}}, in_.data(), m);
    if (c_.arch->expert_activation == ExpertActivation::SwigluOai) {
      for (std::size_t i = 0; i < m; ++i) {
        float* g = gate_.data() + i * F;
        const float* u = up_.data() + i * F;
        add_in_place(g, l.gate_exps_bias.data + std::size_t{e} * F, F);
        add_in_place(up_.data() + i * F, l.up_exps_bias.data + std::size_t{e} * F, F);
        for (uint32_t j = 0; j < F; ++j) g[j] = swiglu_oai(g[j], u[j]);
      }
    } else {
      silu_mul(gate_.data(), up_.data(), gate_.data(), m * F);
    }
    linear.apply(down_e, gate_.data(), m, down_.data());
    if (l.down_exps_bias) {
      for (std::size_t i = 0; i < m; ++i)
        add_in_place(down_.data() + i * D, l.down_exps_bias.data + std::size_t{e} * D, D);
    }
    for (std::size_t i = 0; i < m; ++i) {
      const std::size_t t = rows_[i];
      const float weight = chosen_w_[t * K + ranks_[i]];
      float* dst = expert_out_.data() + (t * K + ranks_[i]) * D;
      for (uint32_t d = 0; d < D; ++d) dst[d] = down_[i * D + d] * weight;
    }
  }
  for (std::size_t t = 0; t < n; ++t) {
    float* o = out + t * D;
    std::copy(expert_out_.data() + t * K * D, expert_out_.data() + t * K * D + D, o);
    for (uint32_t r = 1; r < K; ++r) add_in_place(o, expert_out_.data() + (t * K + r) * D, D);
  }
  if (!l.gate_shexp) return;
  const std::size_t S = l.gate_shexp.n_out;
  linear.apply_shared({{&l.gate_shexp, shared_gate_.data()}, {&l.up_shexp, shared_up_.data()}}, h, n);
  silu_mul(shared_gate_.data(), shared_up_.data(), shared_gate_.data(), n * S);
  linear.apply(l.down_shexp, shared_gate_.data(), n, down_.data());
  for (std::size_t t = 0; t < n; ++t) add_in_place(out + t * D, down_.data() + t * D, D);
}

}  // namespace lamina::model::cpu
