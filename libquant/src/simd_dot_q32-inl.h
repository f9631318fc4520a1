// Per-target dot kernels of the 32-value-block weight formats against Q8_0
// (Q4_0, Q5_0, Q8_0, IQ4_NL, MXFP4) or Q8_1 (Q4_1, Q5_1) activations.
//
// Portable kernels (every target but AVX3_DL; on the 1-lane baseline
// target through simd_int8-inl.h's plain arrays and loops), one block per
// step. Each block's integer dot is exact; it is scaled by d_w * d_a in
// f32 and added lane-wise to the output's accumulator. A kernel handles R
// activation rows per weight block, so the block is decoded once for all.

#if defined(LAMINA_QUANT_SIMD_DOT_Q32_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LAMINA_QUANT_SIMD_DOT_Q32_INL_H_
#undef LAMINA_QUANT_SIMD_DOT_Q32_INL_H_
#else
#define LAMINA_QUANT_SIMD_DOT_Q32_INL_H_
#endif

#include "lamina/quant/blocks.h"
#include "lamina/quant/half.h"
#include "simd_int8-inl.h"
#include "simd_matmul_tiles-inl.h"

HWY_BEFORE_NAMESPACE();
namespace lamina::quant::HWY_NAMESPACE {

namespace portable {
namespace q32 {

// Values of activation block b in the grouped layout (activations_access.h).
HWY_INLINE I8x32 LoadActivations(const ActRow& a, size_t b) {
  const int8_t* lo = a.values + (b / detail::kGroupBlocks) * detail::kGroupValues +
                     (b % detail::kGroupBlocks) * 16;
  return LoadHalves(lo, lo + detail::kGroupValues / 2);
}

// Adds d_w * d_a * (dot(u, a) - kOffset * sum(a)) for weights stored as
// u = q + kOffset. The offset enters the integer dot as a bias spread evenly
// over the lanes, so the block's sum stays exact.
template <int kOffset>
HWY_INLINE void AccumulateOffset(const U8x32& u, float d, const ActRow& a, size_t b, PortableAcc& acc) {
  static_assert(kOffset % static_cast<int>(kI32Lanes) == 0);
  const int32_t sum = -a.lane_neg_sums[b * detail::kLanesPerBlock];
  const VI32 bias = hn::Set(DI32(), -(kOffset / static_cast<int>(kI32Lanes)) * sum);
  AddBlock(acc, DotGroup(bias, u, LoadActivations(a, b)), d, a.lane_scales[b * detail::kLanesPerBlock]);
}

// Adds d_w * d_a * dot(u, a) + m * d_a * sum(a) for value = d * u + m.
HWY_INLINE void AccumulateWithMin(const U8x32& u, float d, float m, const ActRow& a, size_t b,
                                  PortableAcc& acc) {
  AddBlock(acc, DotGroup(hn::Zero(DI32()), u, LoadActivations(a, b)), d, a.lane_scales[b * detail::kLanesPerBlock]);
  AddOffset(acc, m, 4.0f * a.lane_scaled_sums[b * detail::kLanesPerBlock]);
}

HWY_INLINE void AccumulateSigned(const I8x32& w, float d, const ActRow& a, size_t b, PortableAcc& acc) {
  AddBlock(acc, DotGroupSigned(hn::Zero(DI32()), w, LoadActivations(a, b)), d,
           a.lane_scales[b * detail::kLanesPerBlock]);
}

// Q5 values: nibble | (bit j of qh) << 4.
HWY_INLINE U8x32 UnpackQ5(const uint8_t* qs, const uint8_t* qh) {
  return OrBytes(UnpackNibbles16(qs), ExpandBits32(qh, 0x10));
}

}  // namespace q32

// One block per step (n_blocks is always 1).
struct KernelQ4_0 : PortableKernelBase {
  using Block = BlockQ4_0;
  template <size_t R>
  static HWY_INLINE void Accumulate(const Block* w, const ActRow* rows, size_t b, Acc* acc, size_t) {
    const U8x32 u = UnpackNibbles16(w->qs);
    const float d = F16ToF32(w->d);
    for (size_t r = 0; r < R; ++r) q32::AccumulateOffset<8>(u, d, rows[r], b, acc[r]);
  }
};

struct KernelQ5_0 : PortableKernelBase {
  using Block = BlockQ5_0;
  template <size_t R>
  static HWY_INLINE void Accumulate(const Block* w, const ActRow* rows, size_t b, Acc* acc, size_t) {
    const U8x32 u = q32::UnpackQ5(w->qs, w->qh);
    const float d = F16ToF32(w->d);
    for (size_t r = 0; r < R; ++r) q32::AccumulateOffset<16>(u, d, rows[r], b, acc[r]);
  }
};

struct KernelQ4_1 : PortableKernelBase {
  using Block = BlockQ4_1;
  template <size_t R>
  static HWY_INLINE void Accumulate(const Block* w, const ActRow* rows, size_t b, Acc* acc, size_t) {
    const U8x32 u = UnpackNibbles16(w->qs);
    const float d = F16ToF32(w->d);
    const float m = F16ToF32(w->m);
    for (size_t r = 0; r < R; ++r) q32::AccumulateWithMin(u, d, m, rows[r], b, acc[r]);
  }
};

struct KernelQ5_1 : PortableKernelBase {
  using Block = BlockQ5_1;
  template <size_t R>
  static HWY_INLINE void Accumulate(const Block* w, const ActRow* rows, size_t b, Acc* acc, size_t) {
    const U8x32 u = q32::UnpackQ5(w->qs, w->qh);
    const float d = F16ToF32(w->d);
    const float m = F16ToF32(w->m);
    for (size_t r = 0; r < R; ++r) q32::AccumulateWithMin(u, d, m, rows[r], b, acc[r]);
  }
};

struct KernelQ8_0 : PortableKernelBase {
  using Block = BlockQ8_0;
  template <size_t R>
  static HWY_INLINE void Accumulate(const Block* w, const ActRow* rows, size_t b, Acc* acc, size_t) {
    const I8x32 q = LoadI8x32(w->qs);
    const float d = F16ToF32(w->d);
    for (size_t r = 0; r < R; ++r) q32::AccumulateSigned(q, d, rows[r], b, acc[r]);
  }
};

// 4-bit codes into a 16-entry table, times the block's scale.
template <class B, const std::array<int8_t, 16>& kTable, float (*kScale)(const B&)>
struct KernelCodebook : PortableKernelBase {
  using Block = B;
  template <size_t R>
  static HWY_INLINE void Accumulate(const Block* w, const ActRow* rows, size_t b, Acc* acc, size_t) {
    const I8x32 q = LookupNibbles(UnpackNibbles16(w->qs), kTable.data());
    const float d = kScale(*w);
    for (size_t r = 0; r < R; ++r) q32::AccumulateSigned(q, d, rows[r], b, acc[r]);
  }
};
inline float IQ4NLScale(const BlockIQ4_NL& w) { return F16ToF32(w.d); }
inline float MXFP4Scale(const BlockMXFP4& w) { return e8m0_to_f32_half(w.e); }
using KernelIQ4_NL = KernelCodebook<BlockIQ4_NL, kIQ4NLValues, IQ4NLScale>;
using KernelMXFP4 = KernelCodebook<BlockMXFP4, kMXFP4Values, MXFP4Scale>;

}  // namespace portable
}  // namespace lamina::quant::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
