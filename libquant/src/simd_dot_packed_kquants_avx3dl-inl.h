// AVX3_DL kernels of the packed Q3_K, Q4_K, Q5_K and IQ4_XS layouts
// (packed_layout.h), built like the others in simd_dot_packed_avx3dl-inl.h.
//
// Per sub-block (32 values of 16 rows, 4 x 64 bytes): the low and high
// nibbles of each register (Q5_K: with the fifth bit moved in by a GFNI bit
// move and merged by one ternary-logic op) are 4 consecutive values per
// lane. VNNI dots over 16 values (Q4_K: at most 16 * 15 * 127 in magnitude)
// or 8 (Q5_K: 8 * 31 * 127) stay below 2^15, so i16 multiply-adds apply the
// row's scale byte, which a byte permute puts in each lane. The min, in both
// halves of its lane, meets the sub-block's two activation group sums in one
// more multiply-add.
//
// IQ4_XS: the nibbles pick codebook values + 128 (unsigned, for VNNI) with a
// byte shuffle; each sub-block's chain starts from -128 times its activation
// sum (one i16 multiply-add of the two group sums), so it ends with the
// exact signed sum, which a 32-bit multiply scales (it can exceed 2^15).
//
// Q3_K: Q2_K's bit-pair extraction, then +4 where the third bit is set (a
// byte-masked add, the mask loaded as stored); chains start from -4 times
// the group sum, so each ends with the sub-block's signed sum (below 2^13 in
// magnitude). Two sub-blocks' sums share a lane as 16-bit halves, and one
// i16 multiply-add applies their two scales.

#if defined(LAMINA_QUANT_SIMD_DOT_PACKED_KQUANTS_AVX3DL_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LAMINA_QUANT_SIMD_DOT_PACKED_KQUANTS_AVX3DL_INL_H_
#undef LAMINA_QUANT_SIMD_DOT_PACKED_KQUANTS_AVX3DL_INL_H_
#else
#define LAMINA_QUANT_SIMD_DOT_PACKED_KQUANTS_AVX3DL_INL_H_
#endif

#include "simd_dot_packed_avx3dl-inl.h"

#if HWY_TARGET == HWY_AVX3_DL

HWY_BEFORE_NAMESPACE();
namespace lamina::quant::HWY_NAMESPACE::dl {
namespace packed {

// Byte permute indices: lane r gets byte 16 * i + r of a 64-byte register
// (sub-block 4t + i of the sc/mn bytes loaded 4 sub-blocks at a time) into
// bytes 0 and 2.
HWY_INLINE __m512i SubBlockByteIndex(size_t i) {
  const __m512i row = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  const __m512i byte = _mm512_add_epi32(row, _mm512_set1_epi32(static_cast<int>(16 * i)));
  return _mm512_or_si512(byte, _mm512_slli_epi32(byte, 16));
}
inline constexpr __mmask64 kByte0 = 0x1111111111111111ull;
inline constexpr __mmask64 kBytes0And2 = 0x5555555555555555ull;

// The K-quant super-block step shared by Q4_K and Q5_K: Values(p, s, lo, hi)
// unpacks sub-block s into lo[t] (values 4t..4t+3 per lane) and hi[t]
// (16 + 4t ..); kChains dot chains of 32 / kChains values each.
template <size_t kChains, size_t R, class Block, class Values>
HWY_INLINE void AccumulateK45(const Block& p, const detail::ActivationRow* rows, size_t b, Acc64* acc,
                              Values values) {
  __m512i sc4[2], mn4[2], index[4];
  for (size_t h = 0; h < 2; ++h) {
    sc4[h] = _mm512_load_si512(p.sc[4 * h]);
    mn4[h] = _mm512_load_si512(p.mn[4 * h]);
  }
  for (size_t i = 0; i < 4; ++i) index[i] = SubBlockByteIndex(i);
  __m512i isum[R], msum[R];
  for (size_t r = 0; r < R; ++r) isum[r] = msum[r] = _mm512_setzero_si512();
  HWY_UNROLL(2)
  for (size_t s = 0; s < kQK_K / 32; ++s) {
    PrefetchPart<R, kQK_K / 32>(p, s);
    __m512i lo[4], hi[4];
    values(p, s, lo, hi);
    const __m512i scale = _mm512_maskz_permutexvar_epi8(kByte0, index[s % 4], sc4[s / 4]);
    const __m512i min = _mm512_maskz_permutexvar_epi8(kBytes0And2, index[s % 4], mn4[s / 4]);
    for (size_t r = 0; r < R; ++r) {
      const int8_t* a = rows[r].values + kQK_K * b + 32 * s;
      __m512i chain[kChains];
      for (size_t c = 0; c < kChains; ++c) chain[c] = _mm512_setzero_si512();
      for (size_t t = 0; t < 4; ++t) {
        chain[(t * kChains / 2) / 4] = DpbusdBroadcast(chain[(t * kChains / 2) / 4], lo[t], a + 4 * t);
        chain[kChains / 2 + (t * kChains / 2) / 4] =
            DpbusdBroadcast(chain[kChains / 2 + (t * kChains / 2) / 4], hi[t], a + 16 + 4 * t);
      }
      for (size_t c = 0; c < kChains; ++c) isum[r] = Dpwssd(isum[r], chain[c], scale);
      msum[r] = DpwssdBroadcast(msum[r], min, rows[r].group_sums + 16 * b + 2 * s);
    }
  }
  const __m512 d = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(p.d)));
  const __m512 dmin = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(p.dmin)));
  for (size_t r = 0; r < R; ++r) {
    AddBlock(acc[r], isum[r], d, rows[r].scales[b]);
    AddBlock<true>(acc[r], msum[r], dmin, rows[r].scales[b]);
  }
}

struct PackedKernelQ4_K {
  using Block = detail::PackedQ4_K;
  template <size_t R>
  static HWY_INLINE void Accumulate(const Block& p, const detail::ActivationRow* rows, size_t b, Acc64* acc) {
    const __m512i low_nibbles = _mm512_set1_epi8(0x0F);
    const __m512i high_to_low = _mm512_set1_epi64(BitMoveMatrix<4, 0>(4));
    AccumulateK45<2, R>(p, rows, b, acc, [&](const Block& blk, size_t s, __m512i* lo, __m512i* hi) HWY_ATTR {
      for (size_t t = 0; t < 4; ++t) {
        const __m512i q = _mm512_load_si512(blk.qs[s][t]);
        lo[t] = _mm512_and_si512(q, low_nibbles);
        hi[t] = ApplyBitMatrix(q, high_to_low);
      }
    });
  }
};

struct PackedKernelQ5_K {
  using Block = detail::PackedQ5_K;
  template <size_t R>
  static HWY_INLINE void Accumulate(const Block& p, const detail::ActivationRow* rows, size_t b, Acc64* acc) {
    const __m512i low_nibbles = _mm512_set1_epi8(0x0F);
    const __m512i high_to_low = _mm512_set1_epi64(BitMoveMatrix<4, 0>(4));
    AccumulateK45<4, R>(p, rows, b, acc, [&](const Block& blk, size_t s, __m512i* lo, __m512i* hi) HWY_ATTR {
      const __m512i fifth = _mm512_load_si512(blk.sub[s].qh);
      for (size_t t = 0; t < 4; ++t) {
        const __m512i q = _mm512_load_si512(blk.sub[s].qs[t]);
        const __m512i lo_bit = ApplyBitMatrix(fifth, _mm512_set1_epi64(BitMoveMatrix<1, 4>(static_cast<int>(t))));
        const __m512i hi_bit =
            ApplyBitMatrix(fifth, _mm512_set1_epi64(BitMoveMatrix<1, 4>(static_cast<int>(4 + t))));
        // (q & 0x0F) | lo_bit in one op: truth table of (A & C) | B.
        lo[t] = _mm512_ternarylogic_epi32(q, lo_bit, low_nibbles, 0xEC);
        hi[t] = _mm512_or_si512(ApplyBitMatrix(q, high_to_low), hi_bit);
      }
    });
  }
};

struct PackedKernelQ3_K {
  using Block = detail::PackedQ3_K;
  template <size_t R>
  static HWY_INLINE void Accumulate(const Block& p, const detail::ActivationRow* rows, size_t b, Acc64* acc) {
    const __m512i bits[4] = {_mm512_set1_epi64(BitMoveMatrix<2, 0>(0)), _mm512_set1_epi64(BitMoveMatrix<2, 0>(2)),
                             _mm512_set1_epi64(BitMoveMatrix<2, 0>(4)), _mm512_set1_epi64(BitMoveMatrix<2, 0>(6))};
    const __m512i four = _mm512_set1_epi8(4);
    const __m512i minus_4_low = _mm512_set1_epi32(0x0000FFFC);  // i16 pair (-4, 0)
    const __m512i low_half = _mm512_set1_epi32(0x0000FFFF);
    __m512i isum[R];
    for (size_t r = 0; r < R; ++r) isum[r] = _mm512_setzero_si512();
    HWY_UNROLL(2)
    for (size_t pp = 0; pp < kQK_K / 32; ++pp) {
      PrefetchPart<R, kQK_K / 32>(p, pp);
      const Block::Pair& pair = p.pair[pp];
      __m512i u[2][4];
      for (size_t h = 0; h < 2; ++h) {
        const __m512i q = _mm512_loadu_si512(pair.qs[h]);
        for (size_t s = 0; s < 4; ++s) {
          const __m512i low = ApplyBitMatrix(q, bits[s]);
          u[h][s] = _mm512_mask_add_epi8(low, _cvtu64_mask64(pair.high[h][s]), low, four);
        }
      }
      // Lane r: the scales of sub-blocks 2pp and 2pp + 1 as i16 halves.
      const __m512i scales = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p.sc[pp])));
      for (size_t r = 0; r < R; ++r) {
        __m512i sum[2];
        for (size_t h = 0; h < 2; ++h) {
          const size_t j = 2 * pp + h;
          const int8_t* a = rows[r].values + kQK_K * b + 16 * j;
          // Reads group sums j and j + 1, the second times 0 (after the
          // last group of a row: padding, activations.cc).
          sum[h] = DpwssdBroadcast(_mm512_setzero_si512(), minus_4_low, rows[r].group_sums + 16 * b + j);
          for (size_t s = 0; s < 4; ++s) sum[h] = DpbusdBroadcast(sum[h], u[h][s], a + 4 * s);
        }
        // (sum0 & 0xFFFF) | sum1 << 16: truth table of (A & C) | B.
        const __m512i both = _mm512_ternarylogic_epi32(sum[0], _mm512_slli_epi32(sum[1], 16), low_half, 0xEC);
        isum[r] = Dpwssd(isum[r], both, scales);
      }
    }
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p.d)));
    for (size_t r = 0; r < R; ++r) {
      AddBlock(acc[r], isum[r], d, rows[r].scales[b]);
    }
  }
};

struct PackedKernelIQ4_XS {
  using Block = detail::PackedIQ4_XS;
  template <size_t R>
  static HWY_INLINE void Accumulate(const Block& p, const detail::ActivationRow* rows, size_t b, Acc64* acc) {
    alignas(64) static constexpr std::array<uint8_t, 64> kCodes = [] {
      std::array<uint8_t, 64> t{};
      for (size_t i = 0; i < 64; ++i) t[i] = static_cast<uint8_t>(kIQ4NLValues[i % 16] + 128);
      return t;
    }();
    const __m512i codes = LoadTable(kCodes);
    const __m512i low_nibbles = _mm512_set1_epi8(0x0F);
    const __m512i high_to_low = _mm512_set1_epi64(BitMoveMatrix<4, 0>(4));
    const __m512i minus_128 = _mm512_set1_epi16(-128);
    __m512i isum[R];
    for (size_t r = 0; r < R; ++r) isum[r] = _mm512_setzero_si512();
    HWY_UNROLL(2)
    for (size_t s = 0; s < kQK_K / 32; ++s) {
      PrefetchPart<R, kQK_K / 32>(p, s);
      __m512i lo[4], hi[4];
      for (size_t t = 0; t < 4; ++t) {
        const __m512i q = _mm512_loadu_si512(p.qs[s][t]);
        lo[t] = _mm512_shuffle_epi8(codes, _mm512_and_si512(q, low_nibbles));
        hi[t] = _mm512_shuffle_epi8(codes, ApplyBitMatrix(q, high_to_low));
      }
      const __m512i scale = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p.sc[s])));
      for (size_t r = 0; r < R; ++r) {
        const int8_t* a = rows[r].values + kQK_K * b + 32 * s;
        __m512i sum = DpwssdBroadcast(_mm512_setzero_si512(), minus_128, rows[r].group_sums + 16 * b + 2 * s);
        for (size_t t = 0; t < 4; ++t) {
          sum = DpbusdBroadcast(sum, lo[t], a + 4 * t);
          sum = DpbusdBroadcast(sum, hi[t], a + 16 + 4 * t);
        }
        isum[r] = _mm512_add_epi32(isum[r], _mm512_mullo_epi32(sum, scale));
      }
    }
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p.d)));
    for (size_t r = 0; r < R; ++r) {
      AddBlock(acc[r], isum[r], d, rows[r].scales[b]);
    }
  }
};

}  // namespace packed
}  // namespace lamina::quant::HWY_NAMESPACE::dl
HWY_AFTER_NAMESPACE();

#endif  // HWY_TARGET == HWY_AVX3_DL
#endif  // per-target include guard
