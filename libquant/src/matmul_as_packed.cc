// Products of Q4_K and Q5_K rows in the file's own layout with the
// arithmetic of their packed layouts (lamina/quant/packed.h,
// matmul_as_packed), compiled once per target: on AVX3_DL with GFNI the
// integer sums of the unpacked kernels, reduced per block and row, then the
// packed kernels' f64 chain; elsewhere the scalar form below.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "matmul_as_packed.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <cmath>
#include <stdexcept>
#include <string>

#include "hwy/highway.h"
#include "lamina/quant/packed.h"
#include "matmul_families.h"
#include "packed_layout.h"
#include "reference_rows.h"
#include "simd_dot_kquants_avx3dl-inl.h"
#include "simd_matmul_tiles-inl.h"

#if HWY_ONCE
namespace lamina::quant::detail {
namespace {

// Value i (0..255) of a Q4_K / Q5_K block: 64-value chunk j = i / 64 is
// qs[32j ..) with values 64j + l in the low nibbles and 64j + 32 + l in the
// high ones; Q5_K's fifth bit of value 64j + l is bit 2j of qh[l], of
// 64j + 32 + l bit 2j + 1.
int k45_value(const BlockQ4_K& blk, size_t i) {
  const uint8_t byte = blk.qs[32 * (i / 64) + i % 32];
  return (i % 64) < 32 ? byte & 15 : byte >> 4;
}
int k45_value(const BlockQ5_K& blk, size_t i) {
  const uint8_t byte = blk.qs[32 * (i / 64) + i % 32];
  const unsigned bit = 2 * static_cast<unsigned>(i / 64) + ((i % 64) < 32 ? 0 : 1);
  return ((i % 64) < 32 ? byte & 15 : byte >> 4) | ((blk.qh[i % 32] >> bit) & 1) << 4;
}

// The scalar kernel: per output, the chain of dot_packed_group_scalar's
// Q4_K / Q5_K kernel (exact integer sums per super-block, f64 fused
// multiply-adds block by block, f32 at the end).
template <class Block>
void rows_scalar(const Block* w, size_t nb, size_t n_out, size_t begin, size_t end, const QuantizedActivations& x,
                 float* y) {
  for (size_t r = 0; r < x.rows(); ++r) {
    const ActivationRow a = ActivationsAccess::row(x, r);
    for (size_t o = begin; o < end; ++o) {
      double acc = 0.0;
      for (size_t b = 0; b < nb; ++b) {
        const Block& blk = w[o * nb + b];
        int32_t isum = 0;
        int32_t msum = 0;
        for (size_t s = 0; s < kQK_K / 32; ++s) {
          uint8_t scale = 0;
          uint8_t min = 0;
          ref::unpack_k4_scale_min(blk.scales, static_cast<int>(s), scale, min);
          int32_t sub = 0;
          for (size_t i = 32 * s; i < 32 * s + 32; ++i) sub += k45_value(blk, i) * a.values[kQK_K * b + i];
          isum += scale * sub;
          msum += min * (a.group_sums[16 * b + 2 * s] + a.group_sums[16 * b + 2 * s + 1]);
        }
        const float da = a.scales[b];
        acc = add_block<true>(add_block(acc, isum, blk.d, da), msum, blk.dmin, da);
      }
      y[r * n_out + o] = static_cast<float>(acc);
    }
  }
}

}  // namespace

void matmul_as_packed_scalar(QuantFormat format, const void* w, size_t n_out, size_t n_in,
                             const QuantizedActivations& x, float* y, size_t begin, size_t end) {
  const size_t nb = n_in / kQK_K;
  if (format == QuantFormat::Q4_K) {
    rows_scalar(static_cast<const BlockQ4_K*>(w), nb, n_out, begin, end, x, y);
  } else {
    rows_scalar(static_cast<const BlockQ5_K*>(w), nb, n_out, begin, end, x, y);
  }
}

}  // namespace lamina::quant::detail
#endif  // HWY_ONCE

HWY_BEFORE_NAMESPACE();
namespace lamina::quant::HWY_NAMESPACE {

#if HWY_TARGET == HWY_AVX3_DL
namespace dl {

// The scaling of KernelK45 for the tile driver (simd_matmul_tiles-inl.h)
// with one f64 sum per output: the exact integer sums reduced (exact in any
// order), then acc = fma(isum, d * da, acc) and acc = fma(-msum, dmin * da,
// acc), as the packed kernels' lanes do (AddBlock).
struct ScaleAsPacked {
  using Acc = double;
  static constexpr size_t kWeightRows = 1;
  static constexpr size_t kRowTile = 4;
  static constexpr bool kSplitSums = false;
  static HWY_INLINE Acc Zero() { return 0.0; }
  static HWY_INLINE float Finish(const Acc& acc, const Acc&) { return static_cast<float>(acc); }
  template <class Block>
  static HWY_INLINE void Add(__m512i isum, __m256i msum, const Block& w, float da_f32, Acc& acc) {
    const double da = da_f32;
    const __m128i m4 = _mm_add_epi32(_mm256_castsi256_si128(msum), _mm256_extracti128_si256(msum, 1));
    const __m128i m2 = _mm_add_epi32(m4, _mm_unpackhi_epi64(m4, m4));
    const int32_t mins = _mm_cvtsi128_si32(m2) + _mm_extract_epi32(m2, 1);
    acc = std::fma(static_cast<double>(_mm512_reduce_add_epi32(isum)), static_cast<double>(_cvtsh_ss(w.d)) * da, acc);
    acc = std::fma(-static_cast<double>(mins), static_cast<double>(_cvtsh_ss(w.dmin)) * da, acc);
  }
};

}  // namespace dl
#endif

void MatMulAsPacked(QuantFormat format, const void* w, size_t n_out, size_t n_in, const QuantizedActivations& x,
                    float* y, ThreadPool& pool) {
  const size_t nb = n_in / kQK_K;
  // Per value: 1 byte, plus a scale and 16 bsums per 256 values.
  const size_t chunk = detail::activation_rows_per_pass(n_in + n_in / 4);
  const auto rows = [&](size_t begin, size_t end) {
#if HWY_TARGET == HWY_AVX3_DL
    if (dl::CpuHasGfni()) {
      using Q4_K = dl::KernelK45<dl::kq::SumsQ4_K, dl::ScaleAsPacked>;
      using Q5_K = dl::KernelK45<dl::kq::SumsQ5_K, dl::ScaleAsPacked>;
      if (format == QuantFormat::Q4_K) return MatMulRows<Q4_K>(w, nb, n_out, begin, end, x, chunk, y);
      return MatMulRows<Q5_K>(w, nb, n_out, begin, end, x, chunk, y);
    }
#endif
    (void)chunk;
    (void)nb;
    detail::matmul_as_packed_scalar(format, w, n_out, n_in, x, y, begin, end);
  };
  detail::split_output_rows(pool, n_out, x.rows(), rows);
}

}  // namespace lamina::quant::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace lamina::quant {
HWY_EXPORT(MatMulAsPacked);

bool has_packed_arithmetic_on_file_layout(QuantFormat format) {
  return format == QuantFormat::Q4_K || format == QuantFormat::Q5_K;
}

void matmul_as_packed(QuantFormat format, const void* w, size_t n_out, size_t n_in, const QuantizedActivations& x,
                      float* y, ThreadPool& pool) {
  const QuantFormat expected = format_traits(format).activation;
  if (!has_packed_arithmetic_on_file_layout(format) || n_in == 0 || n_in % kQK_K != 0 || x.format() != expected ||
      x.cols() != n_in) {
    throw std::invalid_argument("matmul_as_packed: " + std::string(format_traits(format).name) + " weights with " +
                                std::to_string(n_in) + " columns (Q4_K or Q5_K, a positive multiple of 256) need " +
                                std::string(format_traits(expected).name) + " activations of that length, got " +
                                std::string(format_traits(x.format()).name) + " with " + std::to_string(x.cols()));
  }
  if (n_out == 0 || x.rows() == 0) return;
  HWY_DYNAMIC_DISPATCH(MatMulAsPacked)(format, w, n_out, n_in, x, y, pool);
}
}  // namespace lamina::quant
#endif  // HWY_ONCE
