#include "ops.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>

#include "lamina/quant/half.h"

namespace lamina::model::cpu {
namespace {

// One f16 result per f16 input, computed in f32 as llama.cpp fills its table.
std::array<uint16_t, 65536> build_gelu_table() {
  std::array<uint16_t, 65536> table{};
  for (uint32_t bits = 0; bits < table.size(); ++bits) {
    const float x = quant::f16_to_f32(static_cast<uint16_t>(bits));
    const float g = 0.5f * x * (1.0f + std::tanh(0.7978845608028654f * x * (1.0f + 0.044715f * x * x)));
    table[bits] = quant::f32_to_f16(g);
  }
  return table;
}

}  // namespace

const uint16_t* gelu_f16_table_data() {
  static const std::array<uint16_t, 65536> table = build_gelu_table();
  return table.data();
}

float gelu_f16_table(float x) {
  if (x <= -10.0f) return 0.0f;
  if (x >= 10.0f) return x;
  return quant::f16_to_f32(gelu_f16_table_data()[quant::f32_to_f16(x)]);
}

std::vector<double> yarn_frequencies(const RopeConfig& rope) {
  const double n_dims = rope.n_dims, base = rope.freq_base;
  // The dimension below which a pair turns fewer than `rotations` times over the original context.
  const auto corr_dim = [&](double rotations) {
    return n_dims * std::log(rope.yarn_orig_ctx / (rotations * 2.0 * M_PI)) / (2.0 * std::log(base));
  };
  const double low = std::max(0.0, std::floor(corr_dim(rope.yarn_beta_fast)));
  const double high = std::min(n_dims - 1, std::ceil(corr_dim(rope.yarn_beta_slow)));
  std::vector<double> f(rope.n_dims / 2);
  for (std::size_t i = 0; i < f.size(); ++i) {
    const double extrap = std::pow(base, -2.0 * static_cast<double>(i) / n_dims);
    const double y = (static_cast<double>(i) - low) / std::max(0.001, high - low);
    const double ramp = 1.0 - std::min(1.0, std::max(0.0, y));
    f[i] = extrap * rope.freq_scale * (1.0 - ramp) + extrap * ramp;
  }
  return f;
}

}  // namespace lamina::model::cpu
