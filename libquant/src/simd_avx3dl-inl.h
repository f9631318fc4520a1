// AVX3_DL (AVX-512 with VNNI and VBMI) building blocks of the fast kernels.
//
// Highway 1.0.3 offers no VNNI dot products, no u8 x i8 pair products, no
// 128-bit lane inserts and no GFNI affine bit moves on this
// target, which is what lets a 512-bit vector take 4 blocks (or 64 values)
// at a time; so these kernels use the x86 intrinsics directly, on
// __m512i/__m512. Only the AVX3_DL pass of foreach_target compiles them.

#if defined(LAMINA_QUANT_SIMD_AVX3DL_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LAMINA_QUANT_SIMD_AVX3DL_INL_H_
#undef LAMINA_QUANT_SIMD_AVX3DL_INL_H_
#else
#define LAMINA_QUANT_SIMD_AVX3DL_INL_H_
#endif

#include <array>
#include <cstddef>
#include <cstdint>

#include "hwy/highway.h"

#if HWY_TARGET == HWY_AVX3_DL

HWY_BEFORE_NAMESPACE();
namespace lamina::quant::HWY_NAMESPACE::dl {

// Highway 1.0.3 builds AVX3_DL with "avxvnni" (the VEX encoding, missing on
// e.g. Zen 4/5 and Ice Lake) and not "avx512vnni", which is what its runtime
// check guarantees; so the EVEX instructions are spelled out.
// acc + sum of 4 products u8 * i8 per i32 lane (exact, no saturation).
HWY_INLINE __m512i Dpbusd(__m512i acc, __m512i u, __m512i a) {
  asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u), "vm"(a));
  return acc;
}
// acc + sum of 2 products i16 * i16 per i32 lane.
HWY_INLINE __m512i Dpwssd(__m512i acc, __m512i x, __m512i y) {
  asm("vpdpwssd %2, %1, %0" : "+v"(acc) : "v"(x), "vm"(y));
  return acc;
}

// The matrix of `kCount` bits from bit `from` to bit `kTo`: row 7 - i
// (byte 7 - i) selects the input bits of output bit i.
template <int kCount, int kTo>
constexpr long long BitMoveMatrix(int from) {
  uint64_t m = 0;
  for (int i = kTo; i < kTo + kCount; ++i) m |= uint64_t{1} << (from + i - kTo) << (8 * (7 - i));
  return static_cast<long long>(m);
}

// Each byte of x through the matrix in its 64-bit lane of `matrix`.
HWY_INLINE __m512i ApplyBitMatrix(__m512i x, __m512i matrix) {
  __m512i r;
  asm("vgf2p8affineqb $0, %2, %1, %0" : "=v"(r) : "v"(x), "vm"(matrix));
  return r;
}

// Per byte: `kCount` bits from bit `from` (lo_from in the low 256 bits,
// hi_from in the high ones) moved to bit `kTo`, all other bits 0 -- one
// GF(2) affine transform (GFNI) instead of a shift and a mask. Highway
// 1.0.3's AVX3_DL neither enables nor checks GFNI: the callers check it
// (CpuHasGfni) and use the portable kernels without it.
template <int kCount, int kTo>
HWY_INLINE __m512i MoveBits(__m512i x, int lo_from, int hi_from) {
  return ApplyBitMatrix(x, _mm512_inserti64x4(_mm512_set1_epi64(BitMoveMatrix<kCount, kTo>(lo_from)),
                                              _mm256_set1_epi64x(BitMoveMatrix<kCount, kTo>(hi_from)), 1));
}

// Whether the CPU has GFNI (checked once).
HWY_INLINE bool CpuHasGfni() {
  static const bool has = __builtin_cpu_supports("gfni") != 0;
  return has;
}

HWY_INLINE __m512i Bytes(uint8_t v) { return _mm512_set1_epi8(static_cast<char>(v)); }

template <size_t N>
HWY_INLINE __m512i LoadTable(const std::array<uint8_t, N>& t) {
  static_assert(N == 64);
  return _mm512_loadu_si512(t.data());
}

// The 32 bytes at p in both 256-bit halves.
HWY_INLINE __m512i BroadcastHalf(const uint8_t* p) {
  return _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// Running sum of one output: f32 lanes.
struct Acc {
  __m512 sum;
};

struct KernelBase {
  using Acc = dl::Acc;
  static constexpr size_t kWeightRows = 1;
  static constexpr size_t kRowTile = 4;
  static constexpr bool kSplitSums = true;
  static HWY_INLINE Acc Zero() { return Acc{_mm512_setzero_ps()}; }
  static HWY_INLINE float Finish(const Acc& even, const Acc& odd) {
    return _mm512_reduce_add_ps(_mm512_add_ps(even.sum, odd.sum));
  }
};

}  // namespace lamina::quant::HWY_NAMESPACE::dl
HWY_AFTER_NAMESPACE();

#endif  // HWY_TARGET == HWY_AVX3_DL
#endif  // per-target include guard
