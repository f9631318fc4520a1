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

}  // namespace lamina::model::cpu
