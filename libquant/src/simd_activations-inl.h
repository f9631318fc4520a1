// Per-target activation quantization (f32 rows -> Q8_0 / Q8_1 / Q8_K blocks,
// byte-exact with the scalar reference) and the unpacking of blocks into
// the kernels' layout.
//
// Exactness: the reference forms amax, d = amax / 127, id = 1 / d and
// x * id with single f32 operations and rounds the products; the SIMD code
// performs the same operations lane-wise (a maximum does not depend on the
// order), so every byte matches.

#if defined(LAMINA_QUANT_SIMD_ACTIVATIONS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LAMINA_QUANT_SIMD_ACTIVATIONS_INL_H_
#undef LAMINA_QUANT_SIMD_ACTIVATIONS_INL_H_
#else
#define LAMINA_QUANT_SIMD_ACTIVATIONS_INL_H_
#endif

#include <cmath>
#include <cstring>

#include "activations_access.h"
#include "hwy/highway.h"
#include "lamina/quant/blocks.h"
#include "lamina/quant/half.h"

HWY_BEFORE_NAMESPACE();
namespace lamina::quant::HWY_NAMESPACE {
namespace act {

namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using DI = hn::RebindToSigned<DF>;
using DQ = hn::Rebind<int8_t, DF>;

// max |x[i]| over n values (n a multiple of the vector length).
HWY_INLINE float AbsMax(const float* HWY_RESTRICT x, size_t n) {
  const DF d;
  auto m = hn::Zero(d);
  for (size_t i = 0; i < n; i += hn::Lanes(d)) m = hn::Max(m, hn::Abs(hn::LoadU(d, x + i)));
  return hn::GetLane(hn::MaxOfLanes(d, m));
}

// std::round: to nearest, halfway cases away from zero. x - trunc(x) is
// exact, so the comparison with 0.5 decides the halfway cases correctly.
HWY_INLINE hn::Vec<DF> RoundHalfAway(hn::Vec<DF> v) {
  const DF d;
  const auto t = hn::Trunc(v);
  const auto away = hn::Ge(hn::Abs(hn::Sub(v, t)), hn::Set(d, 0.5f));
  return hn::Add(t, hn::IfThenElseZero(away, hn::CopySignToAbs(hn::Set(d, 1.0f), v)));
}

// q[i] = round(x[i] * id) for n values; returns sum of q.
HWY_INLINE int32_t QuantizeRoundAway(const float* HWY_RESTRICT x, float id, size_t n,
                                     int8_t* HWY_RESTRICT q) {
  const DF d;
  const DI di;
  const DQ dq;
  auto sum = hn::Zero(di);
  for (size_t i = 0; i < n; i += hn::Lanes(d)) {
    const auto qi = hn::ConvertTo(di, RoundHalfAway(hn::Mul(hn::LoadU(d, x + i), hn::Set(d, id))));
    sum = hn::Add(sum, qi);
    hn::StoreU(hn::DemoteTo(dq, qi), dq, q + i);
  }
  return hn::GetLane(hn::SumOfLanes(di, sum));
}

HWY_INLINE void QuantizeQ8_0Row(const float* HWY_RESTRICT x, size_t n, BlockQ8_0* HWY_RESTRICT out) {
  for (size_t b = 0; b < n / kQK; ++b, x += kQK) {
    const float d = AbsMax(x, kQK) / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    out[b].d = f32_to_f16(d);
    QuantizeRoundAway(x, id, kQK, out[b].qs);
  }
}

HWY_INLINE void QuantizeQ8_1Row(const float* HWY_RESTRICT x, size_t n, BlockQ8_1* HWY_RESTRICT out) {
  for (size_t b = 0; b < n / kQK; ++b, x += kQK) {
    const float d = AbsMax(x, kQK) / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    out[b].d = f32_to_f16(d);
    const int32_t sum = QuantizeRoundAway(x, id, kQK, out[b].qs);
    out[b].s = f32_to_f16(static_cast<float>(sum) * d);
  }
}

// Q8_K: the value of largest magnitude (the first on ties) maps to -127;
// rounding is to nearest even.
HWY_INLINE void QuantizeQ8_KRow(const float* HWY_RESTRICT x, size_t n, BlockQ8_K* HWY_RESTRICT out) {
  const DF d;
  const DI di;
  const DQ dq;
  for (size_t b = 0; b < n / kQK_K; ++b, x += kQK_K) {
    BlockQ8_K& blk = out[b];
    const float amax = AbsMax(x, kQK_K);
    if (amax == 0.0f) {
      std::memset(&blk, 0, sizeof(blk));
      continue;
    }
    size_t first = 0;
    while (std::fabs(x[first]) != amax) ++first;
    const float iscale = -127.0f / x[first];
    for (size_t i = 0; i < kQK_K; i += hn::Lanes(d)) {
      const auto scaled = hn::Mul(hn::Set(d, iscale), hn::LoadU(d, x + i));
      const auto q = hn::Min(hn::ConvertTo(di, hn::Round(scaled)), hn::Set(di, 127));
      hn::StoreU(hn::DemoteTo(dq, q), dq, blk.qs + i);
    }
    for (size_t g = 0; g < kQK_K / 16; ++g) {
      int sum = 0;
      for (size_t j = 0; j < 16; ++j) sum += blk.qs[16 * g + j];
      blk.bsums[g] = static_cast<int16_t>(sum);
    }
    blk.d = 1 / iscale;
  }
}

// Derives the kernel layout of row r from its blocks (see
// activations_access.h).
inline void UnpackRow(QuantizedActivations& a, size_t r) {
  using detail::kGroupBlocks;
  using detail::kGroupValues;
  using detail::kLanesPerBlock;
  const size_t n = a.cols();
  const uint8_t* blocks = detail::ActivationsAccess::blocks(a, r);
  const detail::MutableActivationRow row = detail::ActivationsAccess::row(a, r);
  switch (a.format()) {
    case QuantFormat::Q8_0:
    case QuantFormat::Q8_1: {
      const size_t block_bytes = a.format() == QuantFormat::Q8_0 ? sizeof(BlockQ8_0) : sizeof(BlockQ8_1);
      const size_t qs_offset = block_bytes - kQK;  // qs is the last member of both
      const size_t n_blocks = n / kQK;
      const size_t padded = (n_blocks + kGroupBlocks - 1) / kGroupBlocks * kGroupBlocks;
      for (size_t b = 0; b < padded; ++b) {
        int8_t* lo = row.values + (b / kGroupBlocks) * kGroupValues + (b % kGroupBlocks) * 16;
        int8_t* hi = lo + kGroupValues / 2;
        float d = 0.0f;
        int32_t sum = 0;
        if (b < n_blocks) {
          const uint8_t* blk = blocks + b * block_bytes;
          uint16_t d_bits;
          std::memcpy(&d_bits, blk, sizeof(d_bits));
          d = f16_to_f32(d_bits);
          std::memcpy(lo, blk + qs_offset, 16);
          std::memcpy(hi, blk + qs_offset + 16, 16);
          for (size_t j = 0; j < 16; ++j) sum += lo[j] + hi[j];
        } else {
          std::memset(lo, 0, 16);
          std::memset(hi, 0, 16);
        }
        for (size_t l = 0; l < kLanesPerBlock; ++l) {
          row.lane_scales[b * kLanesPerBlock + l] = d;
          row.lane_neg_sums[b * kLanesPerBlock + l] = l == 0 ? -sum : 0;
          row.lane_scaled_sums[b * kLanesPerBlock + l] = d * static_cast<float>(sum) * 0.25f;
        }
      }
      return;
    }
    case QuantFormat::Q8_K: {
      const auto* blk = reinterpret_cast<const BlockQ8_K*>(blocks);
      for (size_t b = 0; b < n / kQK_K; ++b) {
        row.scales[b] = blk[b].d;
        std::memcpy(row.values + b * kQK_K, blk[b].qs, kQK_K);
        std::memcpy(row.group_sums + b * (kQK_K / 16), blk[b].bsums, sizeof(blk[b].bsums));
      }
      return;
    }
    default:
      return;  // F32 rows are used as they are
  }
}

inline void QuantizeRow(const float* HWY_RESTRICT x, QuantizedActivations& a, size_t r) {
  void* blocks = detail::ActivationsAccess::blocks(a, r);
  const size_t n = a.cols();
  switch (a.format()) {
    case QuantFormat::Q8_0: QuantizeQ8_0Row(x, n, static_cast<BlockQ8_0*>(blocks)); break;
    case QuantFormat::Q8_1: QuantizeQ8_1Row(x, n, static_cast<BlockQ8_1*>(blocks)); break;
    case QuantFormat::Q8_K: QuantizeQ8_KRow(x, n, static_cast<BlockQ8_K*>(blocks)); break;
    default: std::memcpy(blocks, x, n * sizeof(float)); break;
  }
  UnpackRow(a, r);
}

}  // namespace act
}  // namespace lamina::quant::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
