// Reference quantizer of MXFP4: per 32-value block the shared exponent is
// the OCP microscaling choice floor(log2(amax)) - 2 (2 being E2M1's largest
// exponent), so the largest value lands in [4, 8) times the scale and
// values past E2M1's 6 saturate; each value then takes the nearest code.
#include <algorithm>
#include <cmath>

#include "lamina/quant/half.h"
#include "reference_rows.h"

namespace lamina::quant::ref {
namespace {

constexpr int kE8M0Bias = 127;
constexpr int kE2M1MaxExponent = 2;

// The stored exponent byte for a block whose largest magnitude is amax; 255
// (NaN in E8M0) is never written.
uint8_t block_exponent(float amax) {
  if (!(amax > 0.0f)) return 0;
  // Clamped as a float first: an infinite amax must not reach the int cast.
  const float e = std::floor(std::log2(amax)) - kE2M1MaxExponent + kE8M0Bias;
  return static_cast<uint8_t>(std::clamp(e, 0.0f, 254.0f));
}

// The code whose value (table entry times d) is nearest to x; the lowest
// code wins ties, so zero is always code 0.
uint8_t nearest_code(float x, float d) {
  uint8_t best = 0;
  float best_err = std::fabs(static_cast<float>(kMXFP4Values[0]) * d - x);
  for (uint8_t i = 1; i < 16; ++i) {
    const float err = std::fabs(static_cast<float>(kMXFP4Values[i]) * d - x);
    if (err < best_err) {
      best = i;
      best_err = err;
    }
  }
  return best;
}

}  // namespace

void quantize_mxfp4(const float* in, size_t nblocks, BlockMXFP4* blocks) {
  for (size_t b = 0; b < nblocks; ++b, in += kQK) {
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(in[j]));
    BlockMXFP4& blk = blocks[b];
    blk.e = block_exponent(amax);
    const float d = e8m0_to_f32_half(blk.e);
    for (int j = 0; j < kQK / 2; ++j) {
      blk.qs[j] = static_cast<uint8_t>(nearest_code(in[j], d) | (nearest_code(in[j + kQK / 2], d) << 4));
    }
  }
}

}  // namespace lamina::quant::ref
