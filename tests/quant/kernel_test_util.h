// Shared helpers of the SIMD kernel tests: random weight rows of any format,
// random activations, and naming of formats in parameterized tests.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <random>
#include <vector>

#include "lamina/quant/blocks.h"
#include "lamina/quant/format.h"
#include "lamina/quant/half.h"
#include "lamina/quant/reference.h"

namespace lamina::quant {

// Lets gtest name parameterized cases "AVX2_Q4_K" rather than by number.
inline void PrintTo(QuantFormat format, std::ostream* os) { *os << format_traits(format).name; }

namespace ktest {

// What a kernel's dot may differ from the f64 reference by, as a share of
// sum |w_i * a_i| (the reasoning is at the top of kernel_matmul_test.cc).
inline constexpr double kRelativeTolerance = 1e-6;

// n_out weight rows of n_in values times n_rows activation rows.
struct Shape {
  size_t n_out;
  size_t n_in;
  size_t n_rows;
};

// A random f16 scale of magnitude in [0.5, 1.5) * 2^-6, either sign.
inline uint16_t random_scale(std::mt19937& rng) {
  std::uniform_real_distribution<float> mag(0.5f, 1.5f);
  const float sign = (rng() & 1) != 0 ? -1.0f : 1.0f;
  return f32_to_f16(sign * mag(rng) * 0x1p-6f);
}

template <class Block, class SetScales>
void randomize_blocks(void* row, size_t n_blocks, SetScales set_scales) {
  auto* blocks = static_cast<Block*>(row);
  for (size_t b = 0; b < n_blocks; ++b) set_scales(blocks[b]);
}

// n_rows rows of n random values in `format`: every bit of the quantized
// payload random (all codes, scales, high bits), the f16 scales sane.
inline std::vector<uint8_t> random_weights(QuantFormat format, size_t n_rows, size_t n,
                                           std::mt19937& rng) {
  const size_t bytes_per_row = row_bytes(format, n);
  std::vector<uint8_t> w(n_rows * bytes_per_row);
  if (format == QuantFormat::F32 || format == QuantFormat::F16 || format == QuantFormat::BF16) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (size_t i = 0; i < n_rows * n; ++i) {
      const float v = normal(rng);
      if (format == QuantFormat::F32) {
        std::memcpy(w.data() + 4 * i, &v, 4);
      } else {
        const uint16_t h = format == QuantFormat::F16 ? f32_to_f16(v) : f32_to_bf16(v);
        std::memcpy(w.data() + 2 * i, &h, 2);
      }
    }
    return w;
  }
  for (uint8_t& byte : w) byte = static_cast<uint8_t>(rng());
  const size_t n_blocks = n_rows * (n / format_traits(format).block_elems);
  auto d = [&](auto& blk) { blk.d = random_scale(rng); };
  auto d_m = [&](auto& blk) {
    blk.d = random_scale(rng);
    blk.m = random_scale(rng);
  };
  auto d_dmin = [&](auto& blk) {
    blk.d = random_scale(rng);
    blk.dmin = random_scale(rng);
  };
  switch (format) {
    case QuantFormat::Q4_0: randomize_blocks<BlockQ4_0>(w.data(), n_blocks, d); break;
    case QuantFormat::Q4_1: randomize_blocks<BlockQ4_1>(w.data(), n_blocks, d_m); break;
    case QuantFormat::Q5_0: randomize_blocks<BlockQ5_0>(w.data(), n_blocks, d); break;
    case QuantFormat::Q5_1: randomize_blocks<BlockQ5_1>(w.data(), n_blocks, d_m); break;
    case QuantFormat::Q8_0: randomize_blocks<BlockQ8_0>(w.data(), n_blocks, d); break;
    case QuantFormat::Q2_K: randomize_blocks<BlockQ2_K>(w.data(), n_blocks, d_dmin); break;
    case QuantFormat::Q3_K: randomize_blocks<BlockQ3_K>(w.data(), n_blocks, d); break;
    case QuantFormat::Q4_K: randomize_blocks<BlockQ4_K>(w.data(), n_blocks, d_dmin); break;
    case QuantFormat::Q5_K: randomize_blocks<BlockQ5_K>(w.data(), n_blocks, d_dmin); break;
    case QuantFormat::Q6_K: randomize_blocks<BlockQ6_K>(w.data(), n_blocks, d); break;
    case QuantFormat::IQ4_NL: randomize_blocks<BlockIQ4_NL>(w.data(), n_blocks, d); break;
    case QuantFormat::IQ4_XS: randomize_blocks<BlockIQ4_XS>(w.data(), n_blocks, d); break;
    case QuantFormat::MXFP4:  // exponents 2^-10 .. 2^5 around the f16 scales' range
      randomize_blocks<BlockMXFP4>(w.data(), n_blocks,
                                   [&](BlockMXFP4& blk) { blk.e = static_cast<uint8_t>(118 + rng() % 16); });
      break;
    default: ADD_FAILURE() << "no random weights for this format"; break;
  }
  return w;
}

// Activation-like rows: normal values, a few large outlier channels, and
// (if there are several rows) one all-zero row.
inline std::vector<float> random_activations(size_t n_rows, size_t n, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(n_rows * n);
  for (float& v : x) v = normal(rng);
  for (size_t r = 0; r < n_rows; ++r) {
    x[r * n + (7 * r + 3) % n] *= 20.0f;
    x[r * n + (11 * r + 5) % n] *= -12.0f;
  }
  if (n_rows > 2) std::fill(x.begin() + n, x.begin() + 2 * n, 0.0f);
  return x;
}

// sum_i |w_i| * |a_i| of dequantized rows: the scale of the rounding error
// a correctly ordered f32 accumulation of the dot can make.
inline double abs_dot(QuantFormat wfmt, const void* wrow, QuantFormat afmt, const void* arow,
                      size_t n) {
  std::vector<float> w(n), a(n);
  dequantize_row_ref(wfmt, wrow, w.data(), n);
  dequantize_row_ref(afmt, arow, a.data(), n);
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) sum += std::fabs(static_cast<double>(w[i]) * a[i]);
  return sum;
}

}  // namespace ktest
}  // namespace lamina::quant
