// Random inputs shared by the GPU kernel tests: activation rows with a wide
// spread of scales and rare outliers, weight matrices quantized from such
// rows, and weight matrices whose every payload bit is random.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "lamina/quant/format.h"
#include "lamina/quant/half.h"
#include "lamina/quant/reference.h"

namespace lamina::cudaexec::test {

inline std::string format_name(quant::QuantFormat f) { return std::string(quant::format_traits(f).name); }

// Normal values with a per-row scale over four decades and rare outliers,
// so blocks see both flat and spiky ranges.
inline std::vector<float> random_rows(uint32_t n_rows, uint32_t n, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> log_scale(-2.0f, 2.0f);
  std::uniform_int_distribution<int> outlier(0, 199);
  std::vector<float> x(static_cast<size_t>(n_rows) * n);
  for (uint32_t r = 0; r < n_rows; ++r) {
    const float scale = std::pow(10.0f, log_scale(rng));
    for (uint32_t i = 0; i < n; ++i) {
      const float v = normal(rng) * scale;
      x[static_cast<size_t>(r) * n + i] = outlier(rng) == 0 ? 8.0f * v : v;
    }
  }
  return x;
}

// rows x cols weights, each row quantize_row_ref of random_rows values.
inline std::vector<uint8_t> quantized_weight_bytes(quant::QuantFormat format, uint32_t rows, uint32_t cols,
                                                   std::mt19937& rng) {
  const size_t rb = quant::row_bytes(format, cols);
  std::vector<uint8_t> w(rb * rows);
  const std::vector<float> values = random_rows(rows, cols, rng);
  for (uint32_t r = 0; r < rows; ++r)
    quant::quantize_row_ref(format, values.data() + static_cast<size_t>(r) * cols, w.data() + r * rb, cols);
  return w;
}

// Byte offsets of the f16 scale fields of one block (d, and dmin or m).
inline std::vector<size_t> f16_fields(quant::QuantFormat f) {
  using quant::QuantFormat;
  switch (f) {
    case QuantFormat::Q4_1:
    case QuantFormat::Q5_1:
    case QuantFormat::Q4_K:
    case QuantFormat::Q5_K: return {0, 2};
    case QuantFormat::Q2_K: return {80, 82};
    case QuantFormat::Q3_K: return {108};
    case QuantFormat::Q6_K: return {208};
    default: return {0};
  }
}

// Every payload bit random (all codes, scales, high bits; more than any
// quantizer produces), the f16 scales finite and moderate: the integer sums
// reach the ranges the kernels rely on. Block formats only.
inline std::vector<uint8_t> random_bit_weight_bytes(quant::QuantFormat format, uint32_t rows, uint32_t cols,
                                                    std::mt19937& rng) {
  std::vector<uint8_t> w(quant::row_bytes(format, cols) * rows);
  for (uint8_t& b : w) b = static_cast<uint8_t>(rng());
  std::uniform_real_distribution<float> mag(0.5f, 1.5f);
  const size_t block_bytes = quant::format_traits(format).block_bytes;
  std::uniform_int_distribution<int> exponent(120, 130);  // MXFP4: scales 2^-8 .. 2^2
  for (size_t at = 0; at < w.size(); at += block_bytes) {
    if (format == quant::QuantFormat::MXFP4) {
      w[at] = static_cast<uint8_t>(exponent(rng));
      continue;
    }
    for (size_t field : f16_fields(format)) {
      const float sign = (rng() & 1) != 0 ? -1.0f : 1.0f;
      const uint16_t h = quant::f32_to_f16(sign * mag(rng) * 0x1p-6f);
      std::memcpy(w.data() + at + field, &h, 2);
    }
  }
  return w;
}

}  // namespace lamina::cudaexec::test
