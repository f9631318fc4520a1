// AVX3_DL kernels of the packed layouts (packed_layout.h): 16 weight rows
// per 512-bit register, one row per 32-bit lane, so each lane ends with its
// output and the per-block scaling is done for 16 rows at once.
//
// Q2_K, per sub-block (16 values of 16 rows, 64 bytes): four GFNI bit moves
// give the four 2-bit fields as bytes, each lane then holding 4 consecutive
// values of its row; four VNNI dots with the 4 matching activations
// (broadcast from memory) make the sub-block's exact sum per row, which is
// below 2^15 in magnitude (16 * 3 * 127), so one i16 multiply-add applies
// the row's scale (the scale's upper 16 bits are 0). The min times the
// activation group sum goes the same way into a second sum.
//
// Q4_0, per block (32 values of 16 rows, 4 x 64 bytes): the low and the high
// nibbles of each register are 4 consecutive values per lane; eight VNNI
// dots on top of -8 times the activations' sum make the exact block sum.
// Q8_0 stores its values plus 128 and starts from -128 times the sum.

#if defined(LAMINA_QUANT_SIMD_DOT_PACKED_AVX3DL_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LAMINA_QUANT_SIMD_DOT_PACKED_AVX3DL_INL_H_
#undef LAMINA_QUANT_SIMD_DOT_PACKED_AVX3DL_INL_H_
#else
#define LAMINA_QUANT_SIMD_DOT_PACKED_AVX3DL_INL_H_
#endif

#include "simd_avx3dl-inl.h"

#if HWY_TARGET == HWY_AVX3_DL

#include "packed_layout.h"
#include "stream_prefetch.h"

HWY_BEFORE_NAMESPACE();
namespace lamina::quant::HWY_NAMESPACE::dl {
namespace packed {

// With one activation row (R == 1) the kernels stream the weights, and
// prefetch (stream_prefetch.h) part i of kParts of each block as they reach
// it: the prefetches of a whole large block at once fill the core's miss
// buffers, and its loads then wait behind them (measured: packed Q4_K at 74%
// of the read bandwidth so, at 93% with them spread over its sub-blocks).
template <size_t R, size_t kParts, class Block>
HWY_INLINE void PrefetchPart(const Block& p, size_t i) {
  if constexpr (R == 1) {
    constexpr size_t kPart = (sizeof(Block) + kParts - 1) / kParts;
    detail::prefetch_stream<kPart>(reinterpret_cast<const char*>(&p) + i * kPart);
  }
}

// The running sums of 16 outputs in f64 (lanes 0..7 in lo, 8..15 in hi).
// A block's dot is an exact integer and d_w * d_a is exact in f64, so each
// block adds one rounding of 2^-53 where f32 would add three of 2^-24: the
// outputs stay that much closer to an exact evaluation, and fewer of them
// land on the other side of a rounding boundary of the next layer's
// activation quantization than the exact value does.
struct Acc64 {
  __m512d lo, hi;
};

// acc += sum * d * da per lane (acc -= with kSubtract); d: 16 f32 factors.
template <bool kSubtract = false>
HWY_INLINE void AddBlock(Acc64& acc, __m512i sum, __m512 d, float da) {
  const __m512d a = _mm512_set1_pd(da);
  const __m512d d_lo = _mm512_mul_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(d)), a);
  const __m512d d_hi = _mm512_mul_pd(_mm512_cvtps_pd(_mm512_extractf32x8_ps(d, 1)), a);
  const __m512d s_lo = _mm512_cvtepi32_pd(_mm512_castsi512_si256(sum));
  const __m512d s_hi = _mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(sum, 1));
  if (kSubtract) {
    acc.lo = _mm512_fnmadd_pd(s_lo, d_lo, acc.lo);
    acc.hi = _mm512_fnmadd_pd(s_hi, d_hi, acc.hi);
  } else {
    acc.lo = _mm512_fmadd_pd(s_lo, d_lo, acc.lo);
    acc.hi = _mm512_fmadd_pd(s_hi, d_hi, acc.hi);
  }
}

// acc + the 4-product dot of each lane of u with the 4 bytes at a.
HWY_INLINE __m512i DpbusdBroadcast(__m512i acc, __m512i u, const int8_t* a) {
  asm("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(u), "m"(*reinterpret_cast<const int32_t*>(a)));
  return acc;
}
// acc + x.lo16 * p[0] + x.hi16 * p[1] per lane.
HWY_INLINE __m512i DpwssdBroadcast(__m512i acc, __m512i x, const int16_t* p) {
  asm("vpdpwssd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(x), "m"(*reinterpret_cast<const int32_t*>(p)));
  return acc;
}

// Accumulate<R>(p, rows, b, acc): acc[r] (lane i: output row i of the
// group) += the dots of packed block p with block b of activation rows
// rows[0 .. R).
struct PackedKernelQ2_K {
  using Block = detail::PackedQ2_K;
  template <size_t R>
  static HWY_INLINE void Accumulate(const Block& p, const detail::ActivationRow* rows, size_t b, Acc64* acc) {
    const __m512i bits0 = _mm512_set1_epi64(BitMoveMatrix<2, 0>(0));
    const __m512i bits1 = _mm512_set1_epi64(BitMoveMatrix<2, 0>(2));
    const __m512i bits2 = _mm512_set1_epi64(BitMoveMatrix<2, 0>(4));
    const __m512i bits3 = _mm512_set1_epi64(BitMoveMatrix<2, 0>(6));
    const __m512i low_nibble = _mm512_set1_epi32(0x0F);
    // The scale bytes of sub-blocks 4t .. 4t + 3 in sc4[t]; byte_index[i]
    // picks those of sub-block 4t + i into byte 0 of each row's lane.
    __m512i sc4[4], byte_index[4];
    for (size_t t = 0; t < 4; ++t) {
      sc4[t] = _mm512_load_si512(p.sc[4 * t]);
      byte_index[t] = _mm512_add_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                       _mm512_set1_epi32(static_cast<int>(16 * t)));
    }
    __m512i isum[R], msum[R];
    for (size_t r = 0; r < R; ++r) isum[r] = msum[r] = _mm512_setzero_si512();
    HWY_UNROLL(4)
    for (size_t j = 0; j < kQK_K / 16; ++j) {
      if (j % 4 == 0) PrefetchPart<R, 4>(p, j / 4);
      const __m512i q = _mm512_load_si512(p.qs[j]);
      const __m512i u0 = ApplyBitMatrix(q, bits0);
      const __m512i u1 = ApplyBitMatrix(q, bits1);
      const __m512i u2 = ApplyBitMatrix(q, bits2);
      const __m512i u3 = ApplyBitMatrix(q, bits3);
      const __m512i scale_min = _mm512_maskz_permutexvar_epi8(0x1111111111111111ull, byte_index[j % 4], sc4[j / 4]);
      const __m512i scale = _mm512_and_si512(scale_min, low_nibble);
      const __m512i min = _mm512_srli_epi32(scale_min, 4);
      for (size_t r = 0; r < R; ++r) {
        const int8_t* a = rows[r].values + kQK_K * b + 16 * j;
        __m512i sub = DpbusdBroadcast(_mm512_setzero_si512(), u0, a);
        sub = DpbusdBroadcast(sub, u1, a + 4);
        sub = DpbusdBroadcast(sub, u2, a + 8);
        sub = DpbusdBroadcast(sub, u3, a + 12);
        isum[r] = Dpwssd(isum[r], sub, scale);
        // Reads group sums j and j + 1 (min's upper half is 0); after the
        // last group of a row that is padding (activations.cc).
        msum[r] = DpwssdBroadcast(msum[r], min, rows[r].group_sums + 16 * b + j);
      }
    }
    const __m512 d = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(p.d)));
    const __m512 dmin = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(p.dmin)));
    for (size_t r = 0; r < R; ++r) {
      AddBlock(acc[r], isum[r], d, rows[r].scales[b]);
      AddBlock<true>(acc[r], msum[r], dmin, rows[r].scales[b]);
    }
  }
};

// The 32-value formats: u[t] holds values 4t .. 4t + 3 per lane, u[4 + t]
// values 16 + 4t .. 16 + 4t + 3; the stored values carry an offset of
// 2^kOffsetShift, so the dot starts from minus that times the activations'
// sum.
template <int kOffsetShift, size_t R>
HWY_INLINE void AccumulateBlock32(const __m512i* u, const uint16_t* d16, const detail::ActivationRow* rows, size_t b,
                                  Acc64* acc) {
  const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(d16)));
  // Values 0..15 of block b, then 16..31 at + 64 (activations_access.h).
  const size_t first = detail::kGroupValues * (b / detail::kGroupBlocks) + 16 * (b % detail::kGroupBlocks);
  for (size_t r = 0; r < R; ++r) {
    const int8_t* a = rows[r].values + first;
    __m512i sum =
        _mm512_slli_epi32(_mm512_set1_epi32(rows[r].lane_neg_sums[b * detail::kLanesPerBlock]), kOffsetShift);
    for (size_t t = 0; t < 4; ++t) {
      sum = DpbusdBroadcast(sum, u[t], a + 4 * t);
      sum = DpbusdBroadcast(sum, u[4 + t], a + detail::kGroupValues / 2 + 4 * t);
    }
    AddBlock(acc[r], sum, d, rows[r].lane_scales[b * detail::kLanesPerBlock]);
  }
}

struct PackedKernelQ4_0 {
  using Block = detail::PackedQ4_0;
  template <size_t R>
  static HWY_INLINE void Accumulate(const Block& p, const detail::ActivationRow* rows, size_t b, Acc64* acc) {
    PrefetchPart<R, 1>(p, 0);
    const __m512i low_nibbles = _mm512_set1_epi8(0x0F);
    const __m512i high_to_low = _mm512_set1_epi64(BitMoveMatrix<4, 0>(4));
    __m512i u[8];
    for (size_t t = 0; t < 4; ++t) {
      const __m512i q = _mm512_loadu_si512(p.qs[t]);
      u[t] = _mm512_and_si512(q, low_nibbles);
      u[4 + t] = ApplyBitMatrix(q, high_to_low);
    }
    AccumulateBlock32<3, R>(u, p.d, rows, b, acc);
  }
};

struct PackedKernelQ8_0 {
  using Block = detail::PackedQ8_0;
  template <size_t R>
  static HWY_INLINE void Accumulate(const Block& p, const detail::ActivationRow* rows, size_t b, Acc64* acc) {
    PrefetchPart<R, 1>(p, 0);
    __m512i u[8];
    for (size_t t = 0; t < 8; ++t) u[t] = _mm512_loadu_si512(p.qs[t]);
    AccumulateBlock32<7, R>(u, p.d, rows, b, acc);
  }
};

// Outputs of group g for activation rows rows[0 .. R): y[r] + o for output o.
template <class Kernel, size_t R>
HWY_INLINE void DotGroup(const detail::PackedView& w, size_t g, const detail::ActivationRow* rows,
                         float* const* y) {
  const size_t nb = w.blocks_per_row();
  const auto* blocks = reinterpret_cast<const typename Kernel::Block*>(w.data) + g * nb;
  Acc64 acc[R];
  for (size_t r = 0; r < R; ++r) acc[r] = {_mm512_setzero_pd(), _mm512_setzero_pd()};
  for (size_t b = 0; b < nb; ++b) Kernel::template Accumulate<R>(blocks[b], rows, b, acc);
  const size_t first = g * detail::kPackedRows;
  const __mmask16 keep = static_cast<__mmask16>((1u << w.rows_in_group(g)) - 1);
  for (size_t r = 0; r < R; ++r) {
    const __m512 out = _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtpd_ps(acc[r].lo)),
                                          _mm512_cvtpd_ps(acc[r].hi), 1);
    _mm512_mask_storeu_ps(y[r] + first, keep, out);
  }
}

}  // namespace packed
}  // namespace lamina::quant::HWY_NAMESPACE::dl
HWY_AFTER_NAMESPACE();

#endif  // HWY_TARGET == HWY_AVX3_DL
#endif  // per-target include guard
