// AVX3_DL kernels of the super-block formats: 64 values per 512-bit op.
//
// Each 64-value vector of weights is unpacked into unsigned bytes in
// element order (two 32-value chunks, one per 256-bit half, each bit field
// moved into place by one GFNI affine transform), multiplied with the Q8_K
// activations into i16 pairs (pmaddubsw; no saturation as the values are
// < 64 and |a| <= 127, IQ4_XS aside) and then with the sub-block scales
// into i32 lanes (VNNI).
// Minima and offsets use the bsums, as in the portable kernels.

#if defined(LAMINA_QUANT_SIMD_DOT_KQUANTS_AVX3DL_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LAMINA_QUANT_SIMD_DOT_KQUANTS_AVX3DL_INL_H_
#undef LAMINA_QUANT_SIMD_DOT_KQUANTS_AVX3DL_INL_H_
#else
#define LAMINA_QUANT_SIMD_DOT_KQUANTS_AVX3DL_INL_H_
#endif

#include "simd_avx3dl-inl.h"
#include "simd_matmul_tiles-inl.h"

#if HWY_TARGET == HWY_AVX3_DL

#include <cstring>

#include "lamina/quant/blocks.h"

HWY_BEFORE_NAMESPACE();
namespace lamina::quant::HWY_NAMESPACE::dl {
namespace kq {

// i16 lane L of a 64-value vector pairs values 2L and 2L + 1; with 16-value
// sub-blocks it belongs to sub-block `first + L / 8`, with 32-value ones to
// `first + L / 16`. Permute indices that pick those sub-blocks' scales.
template <size_t kValuesPerScale>
HWY_INLINE __m512i ScaleIndex(int first) {
  const __m512i lane = _mm512_set_epi16(31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16,
                                        15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  return _mm512_add_epi16(_mm512_srli_epi16(lane, kValuesPerScale == 16 ? 3 : 4),
                          _mm512_set1_epi16(static_cast<int16_t>(first)));
}

// acc + sum over 64 values of u * a * (its sub-block's scale).
HWY_INLINE __m512i DotScaled(__m512i acc, __m512i u, const int8_t* a, __m512i scales) {
  return Dpwssd(acc, _mm512_maddubs_epi16(u, _mm512_loadu_si512(a)), scales);
}

// Bytes with bit `lo_bit` (low 256 bits) / `hi_bit` (high 256 bits) set in
// `bits` get `value` added.
HWY_INLINE __m512i AddBit(__m512i u, __m512i bits, int lo_bit, int hi_bit, uint8_t value) {
  const __m512i pattern = _mm512_inserti64x4(_mm512_set1_epi8(static_cast<char>(1 << lo_bit)),
                                             _mm256_set1_epi8(static_cast<char>(1 << hi_bit)), 1);
  return _mm512_mask_add_epi8(u, _mm512_test_epi8_mask(bits, pattern), u, Bytes(value));
}

HWY_INLINE __m512 Widen(__m256 v) { return _mm512_zextps256_ps512(v); }

// acc += d_w * d_a * isum + neg_dmin * d_a * msum (msum: 8 i32 lanes).
HWY_INLINE void AddScaled(__m512i isum, float d, float da, Acc& acc) {
  acc.sum = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_set1_ps(d * da), acc.sum);
}
HWY_INLINE void AddScaledMins(__m256i msum, float neg_dmin, float da, Acc& acc) {
  acc.sum = _mm512_fmadd_ps(Widen(_mm256_cvtepi32_ps(msum)), _mm512_set1_ps(neg_dmin * da), acc.sum);
}

HWY_INLINE __m256i LoadGroupSums(const ActRow& a, size_t b) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.group_sums + 16 * b));
}

// Q4_K/Q5_K: the 8 scales (i16 lanes 0..7) and 8 mins (lanes 8..15); the
// bit layout is described in simd_dot_kquants-inl.h.
HWY_INLINE __m256i ScalesAndMins(const uint8_t* packed) {
  uint32_t w0, w1, w2;
  std::memcpy(&w0, packed, 4);
  std::memcpy(&w1, packed + 4, 4);
  std::memcpy(&w2, packed + 8, 4);
  const uint32_t scales_lo = w0 & 0x3F3F3F3Fu;
  const uint32_t mins_lo = w1 & 0x3F3F3F3Fu;
  const uint32_t scales_hi = (w2 & 0x0F0F0F0Fu) | ((w0 >> 2) & 0x30303030u);
  const uint32_t mins_hi = ((w2 >> 4) & 0x0F0F0F0Fu) | ((w1 >> 2) & 0x30303030u);
  const __m128i bytes = _mm_set_epi32(static_cast<int>(mins_hi), static_cast<int>(mins_lo),
                                      static_cast<int>(scales_hi), static_cast<int>(scales_lo));
  return _mm256_cvtepu8_epi16(bytes);
}

}  // namespace kq

namespace kq {

// The exact integer sums of Q4_K/Q5_K block w with block b of rows[0 .. R):
// isum[r], 16 lanes adding up to sum_s scale_s * dot_s, and msum[r], 8 lanes
// adding up to sum_s min_s * (the activation sums of sub-block s).
// values(j) is chunk j (values 64j .. 64j + 63) as unsigned bytes.
template <size_t R, class Block, class Values>
HWY_INLINE void SumsK45(const Block* w, const ActRow* rows, size_t b, Values values, __m512i* isum,
                        __m256i* msum) {
  const __m256i scales_mins = ScalesAndMins(w->scales);
  const __m512i sm = _mm512_castsi256_si512(scales_mins);
  for (size_t r = 0; r < R; ++r) isum[r] = _mm512_setzero_si512();
  HWY_UNROLL(4)
  for (int j = 0; j < 4; ++j) {
    const __m512i u = values(j);
    const __m512i scales = _mm512_permutexvar_epi16(ScaleIndex<32>(2 * j), sm);
    for (size_t r = 0; r < R; ++r) {
      isum[r] = DotScaled(isum[r], u, rows[r].values + b * kQK_K + 64 * j, scales);
    }
  }
  // Each min applies to two bsums: lanes 8 + s / 2.
  const __m256i mins = _mm256_permutexvar_epi16(
      _mm256_set_epi16(15, 15, 14, 14, 13, 13, 12, 12, 11, 11, 10, 10, 9, 9, 8, 8), scales_mins);
  for (size_t r = 0; r < R; ++r) msum[r] = _mm256_madd_epi16(LoadGroupSums(rows[r], b), mins);
}

// SumsK45 of a Q4_K block.
struct SumsQ4_K {
  using Block = BlockQ4_K;
  template <size_t R>
  static HWY_INLINE void Run(const Block* w, const ActRow* rows, size_t b, __m512i* isum, __m256i* msum) {
    SumsK45<R>(
        w, rows, b, [&](int j) HWY_ATTR { return MoveBits<4, 0>(BroadcastHalf(w->qs + 32 * j), 0, 4); }, isum,
        msum);
  }
};

// SumsK45 of a Q5_K block.
struct SumsQ5_K {
  using Block = BlockQ5_K;
  template <size_t R>
  static HWY_INLINE void Run(const Block* w, const ActRow* rows, size_t b, __m512i* isum, __m256i* msum) {
    const __m512i high = BroadcastHalf(w->qh);
    SumsK45<R>(
        w, rows, b,
        [&](int j) HWY_ATTR {
          const __m512i u = MoveBits<4, 0>(BroadcastHalf(w->qs + 32 * j), 0, 4);
          return AddBit(u, high, 2 * j, 2 * j + 1, 0x10);
        },
        isum, msum);
  }
};

}  // namespace kq

// Q4_K and Q5_K: the exact sums of Sums, scaled by Scaling, which provides
// the tile driver's Acc, Zero, Finish, kWeightRows, kRowTile, kSplitSums
// and Add(isum, msum, block, da, acc).
template <class Sums, class Scaling>
struct KernelK45 : Scaling {
  using Block = typename Sums::Block;
  static constexpr size_t kBlocksPerStep = 1;
  template <size_t R>
  static HWY_INLINE void Accumulate(const Block* w, const ActRow* rows, size_t b, typename Scaling::Acc* acc,
                                    size_t) {
    __m512i isum[R];
    __m256i msum[R];
    Sums::template Run<R>(w, rows, b, isum, msum);
    for (size_t r = 0; r < R; ++r) Scaling::Add(isum[r], msum[r], *w, rows[r].scales[b], acc[r]);
  }
};

// The unpacked kernels' scaling: f32 lanes.
struct ScaleInF32Lanes : KernelBase {
  template <class Block>
  static HWY_INLINE void Add(__m512i isum, __m256i msum, const Block& w, float da, Acc& acc) {
    kq::AddScaled(isum, _cvtsh_ss(w.d), da, acc);
    kq::AddScaledMins(msum, -_cvtsh_ss(w.dmin), da, acc);
  }
};
using KernelQ4_K = KernelK45<kq::SumsQ4_K, ScaleInF32Lanes>;
using KernelQ5_K = KernelK45<kq::SumsQ5_K, ScaleInF32Lanes>;

// Q6_K: per 128-value half, values 0..63 are the low nibbles of ql[0..64)
// with qh bits 0-1 (values 0..31) or 2-3 (32..63) on top; values 64..127
// the high nibbles with qh bits 4-5 / 6-7.
struct KernelQ6_K : KernelBase {
  using Block = BlockQ6_K;
  static constexpr size_t kBlocksPerStep = 1;
  template <size_t R>
  static HWY_INLINE void Accumulate(const Block* w, const ActRow* rows, size_t b, Acc* acc, size_t) {
    const __m256i scales16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w->scales)));
    const __m512i sc = _mm512_castsi256_si512(scales16);
    __m512i isum[R];
    for (size_t r = 0; r < R; ++r) isum[r] = _mm512_setzero_si512();
    HWY_UNROLL(2)
    for (int h = 0; h < 2; ++h) {
      const __m512i ql = _mm512_loadu_si512(w->ql + 64 * h);
      const __m512i qh = BroadcastHalf(w->qh + 32 * h);
      const __m512i u01 = _mm512_or_si512(
          _mm512_and_si512(ql, Bytes(0x0F)),
          MoveBits<2, 4>(qh, 0, 2));
      const __m512i u23 = _mm512_or_si512(
          _mm512_and_si512(_mm512_srli_epi16(ql, 4), Bytes(0x0F)),
          MoveBits<2, 4>(qh, 4, 6));
      const __m512i s01 = _mm512_permutexvar_epi16(kq::ScaleIndex<16>(8 * h), sc);
      const __m512i s23 = _mm512_permutexvar_epi16(kq::ScaleIndex<16>(8 * h + 4), sc);
      for (size_t r = 0; r < R; ++r) {
        const int8_t* a = rows[r].values + b * kQK_K + 128 * h;
        isum[r] = kq::DotScaled(isum[r], u01, a, s01);
        isum[r] = kq::DotScaled(isum[r], u23, a + 64, s23);
      }
    }
    const float d = _cvtsh_ss(w->d);
    for (size_t r = 0; r < R; ++r) {
      // The stored values are q + 32: subtract 32 * sum_s scale_s * bsum_s.
      const __m256i offset = _mm256_madd_epi16(kq::LoadGroupSums(rows[r], b), scales16);
      const __m512i total = _mm512_sub_epi32(isum[r], _mm512_zextsi256_si512(_mm256_slli_epi32(offset, 5)));
      kq::AddScaled(total, d, rows[r].scales[b], acc[r]);
    }
  }
};

// Q3_K: per 128-value half, 32 value bytes give 2 bits per value (shift
// 0, 2, 4, 6 for the four 32-value chunks) and hmask bit 4 * half + chunk
// adds 4.
struct KernelQ3_K : KernelBase {
  using Block = BlockQ3_K;
  static constexpr size_t kBlocksPerStep = 1;
  template <size_t R>
  static HWY_INLINE void Accumulate(const Block* w, const ActRow* rows, size_t b, Acc* acc, size_t) {
    uint32_t a0, a1, top;
    std::memcpy(&a0, w->scales, 4);
    std::memcpy(&a1, w->scales + 4, 4);
    std::memcpy(&top, w->scales + 8, 4);
    const __m128i scale_bytes = _mm_sub_epi8(
        _mm_set_epi32(static_cast<int>(((a1 >> 4) & 0x0F0F0F0Fu) | ((top >> 2) & 0x30303030u)),
                      static_cast<int>(((a0 >> 4) & 0x0F0F0F0Fu) | (top & 0x30303030u)),
                      static_cast<int>((a1 & 0x0F0F0F0Fu) | ((top << 2) & 0x30303030u)),
                      static_cast<int>((a0 & 0x0F0F0F0Fu) | ((top << 4) & 0x30303030u))),
        _mm_set1_epi8(32));
    const __m256i scales16 = _mm256_cvtepi8_epi16(scale_bytes);
    const __m512i sc = _mm512_castsi256_si512(scales16);
    const __m512i hmask = BroadcastHalf(w->hmask);
    __m512i isum[R];
    for (size_t r = 0; r < R; ++r) isum[r] = _mm512_setzero_si512();
    HWY_UNROLL(2)
    for (int h = 0; h < 2; ++h) {
      const __m512i q = BroadcastHalf(w->qs + 32 * h);
      __m512i u01 = MoveBits<2, 0>(q, 0, 2);
      __m512i u23 = MoveBits<2, 0>(q, 4, 6);
      u01 = kq::AddBit(u01, hmask, 4 * h, 4 * h + 1, 4);
      u23 = kq::AddBit(u23, hmask, 4 * h + 2, 4 * h + 3, 4);
      const __m512i s01 = _mm512_permutexvar_epi16(kq::ScaleIndex<16>(8 * h), sc);
      const __m512i s23 = _mm512_permutexvar_epi16(kq::ScaleIndex<16>(8 * h + 4), sc);
      for (size_t r = 0; r < R; ++r) {
        const int8_t* a = rows[r].values + b * kQK_K + 128 * h;
        isum[r] = kq::DotScaled(isum[r], u01, a, s01);
        isum[r] = kq::DotScaled(isum[r], u23, a + 64, s23);
      }
    }
    const float d = _cvtsh_ss(w->d);
    for (size_t r = 0; r < R; ++r) {
      // The stored values are q + 4: subtract 4 * sum_s scale_s * bsum_s.
      const __m256i offset = _mm256_madd_epi16(kq::LoadGroupSums(rows[r], b), scales16);
      const __m512i total = _mm512_sub_epi32(isum[r], _mm512_zextsi256_si512(_mm256_slli_epi32(offset, 2)));
      kq::AddScaled(total, d, rows[r].scales[b], acc[r]);
    }
  }
};

// Q2_K: 2-bit values laid out as Q3_K's low bits; 4-bit scale (low nibble)
// and min (high nibble) per 16 values.
struct KernelQ2_K : KernelBase {
  using Block = BlockQ2_K;
  static constexpr size_t kBlocksPerStep = 1;
  template <size_t R>
  static HWY_INLINE void Accumulate(const Block* w, const ActRow* rows, size_t b, Acc* acc, size_t) {
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w->scales));
    const __m256i scales16 = _mm256_cvtepu8_epi16(_mm_and_si128(packed, _mm_set1_epi8(0x0F)));
    const __m256i mins16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(packed, 4), _mm_set1_epi8(0x0F)));
    const __m512i sc = _mm512_castsi256_si512(scales16);
    __m512i isum[R];
    for (size_t r = 0; r < R; ++r) isum[r] = _mm512_setzero_si512();
    HWY_UNROLL(2)
    for (int h = 0; h < 2; ++h) {
      const __m512i q = BroadcastHalf(w->qs + 32 * h);
      const __m512i u01 = MoveBits<2, 0>(q, 0, 2);
      const __m512i u23 = MoveBits<2, 0>(q, 4, 6);
      const __m512i s01 = _mm512_permutexvar_epi16(kq::ScaleIndex<16>(8 * h), sc);
      const __m512i s23 = _mm512_permutexvar_epi16(kq::ScaleIndex<16>(8 * h + 4), sc);
      for (size_t r = 0; r < R; ++r) {
        const int8_t* a = rows[r].values + b * kQK_K + 128 * h;
        isum[r] = kq::DotScaled(isum[r], u01, a, s01);
        isum[r] = kq::DotScaled(isum[r], u23, a + 64, s23);
      }
    }
    const float d = _cvtsh_ss(w->d);
    const float neg_dmin = -_cvtsh_ss(w->dmin);
    for (size_t r = 0; r < R; ++r) {
      const float da = rows[r].scales[b];
      kq::AddScaled(isum[r], d, da, acc[r]);
      kq::AddScaledMins(_mm256_madd_epi16(kq::LoadGroupSums(rows[r], b), mins16), neg_dmin, da, acc[r]);
    }
  }
};

// IQ4_XS: codebook values plus 128 as unsigned bytes (up to 241, too large
// for pmaddubsw pairs), so VNNI gives exact per-lane sums of 4 and the
// sub-block scale multiplies those; the +128 is taken back with the bsums.
struct KernelIQ4_XS : KernelBase {
  using Block = BlockIQ4_XS;
  static constexpr size_t kBlocksPerStep = 1;
  template <size_t R>
  static HWY_INLINE void Accumulate(const Block* w, const ActRow* rows, size_t b, Acc* acc, size_t) {
    alignas(64) static constexpr std::array<uint8_t, 64> kCodes = [] {
      std::array<uint8_t, 64> t{};
      for (size_t i = 0; i < 64; ++i) t[i] = static_cast<uint8_t>(kIQ4NLValues[i % 16] + 128);
      return t;
    }();
    // Scale of sub-block s: low 4 bits from nibble s of scales_l, high 2 bits
    // from bit pair s of scales_h, minus 32.
    uint32_t low;
    std::memcpy(&low, w->scales_l, 4);
    const uint64_t scale_bytes = _pdep_u64(low, 0x0F0F0F0F0F0F0F0Full) |
                                 (_pdep_u64(w->scales_h, 0x0303030303030303ull) << 4);
    const __m128i bytes = _mm_cvtsi64_si128(static_cast<long long>(scale_bytes));
    const __m256i scales32 = _mm256_sub_epi32(_mm256_cvtepu8_epi32(bytes), _mm256_set1_epi32(32));
    const __m512i sc = _mm512_castsi256_si512(scales32);
    const __m512i codes = LoadTable(kCodes);
    // Low nibbles in 128-bit lanes 0 and 2, high nibbles in 1 and 3.
    constexpr long long kLow = BitMoveMatrix<4, 0>(0);
    constexpr long long kHigh = BitMoveMatrix<4, 0>(4);
    const __m512i nibble_matrix = _mm512_set_epi64(kHigh, kHigh, kLow, kLow, kHigh, kHigh, kLow, kLow);
    __m512i isum[R];
    for (size_t r = 0; r < R; ++r) isum[r] = _mm512_setzero_si512();
    HWY_UNROLL(4)
    for (int p = 0; p < 4; ++p) {
      // 16 bytes of sub-block 2p, then of 2p + 1 -> 128-bit lanes
      // [2p, 2p, 2p + 1, 2p + 1], low nibbles in lanes 0 and 2.
      const __m512i both = BroadcastHalf(w->qs + 32 * p);
      const __m512i lanes = _mm512_shuffle_i64x2(both, both, _MM_SHUFFLE(1, 1, 0, 0));
      const __m512i nibbles = ApplyBitMatrix(lanes, nibble_matrix);
      const __m512i u = _mm512_shuffle_epi8(codes, nibbles);
      const __m512i scales = _mm512_permutexvar_epi32(
          _mm512_set_epi32(2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1,
                           2 * p + 1, 2 * p, 2 * p, 2 * p, 2 * p, 2 * p, 2 * p, 2 * p, 2 * p),
          sc);
      for (size_t r = 0; r < R; ++r) {
        const __m512i dot = Dpbusd(_mm512_setzero_si512(), u,
                                   _mm512_loadu_si512(rows[r].values + b * kQK_K + 64 * p));
        isum[r] = _mm512_add_epi32(isum[r], _mm512_mullo_epi32(dot, scales));
      }
    }
    // Subtract 128 * sum_s scale_s * bsum32_s, each scale covering two bsums.
    const __m256i scales16 = _mm256_sub_epi16(_mm256_cvtepu8_epi16(_mm_unpacklo_epi8(bytes, bytes)),
                                              _mm256_set1_epi16(32));
    const float d = _cvtsh_ss(w->d);
    for (size_t r = 0; r < R; ++r) {
      const __m256i offset = _mm256_madd_epi16(kq::LoadGroupSums(rows[r], b), scales16);
      const __m512i total = _mm512_sub_epi32(isum[r], _mm512_zextsi256_si512(_mm256_slli_epi32(offset, 7)));
      kq::AddScaled(total, d, rows[r].scales[b], acc[r]);
    }
  }
};

}  // namespace lamina::quant::HWY_NAMESPACE::dl
HWY_AFTER_NAMESPACE();

#endif  // HWY_TARGET == HWY_AVX3_DL
#endif  // per-target include guard
