// Tensor-core products of the 32-value block formats (Q4_0, Q4_1, Q5_0,
// Q5_1, Q8_0, IQ4_NL): one block per work unit, its two 16-value chunks
// summed by the MMA into the block's exact integer dot, then scaled with the
// operations of matmul_q32.cu's kernel.
//
// Q4_0's -8 and Q5_0's -16 are folded into the int8 weights: the integer
// sum equals the matvec's dot - 8 * sum (or - 16 * sum) exactly.
#include "matmul_mma_kernel.cuh"

namespace lamina::cudaexec::detail {
namespace {

struct Q32WMeta {
  float d;
  float m;  // minimum (affine formats only)
};
struct Q32AMeta {
  float da;
  float sum;  // the block's exact integer sum as f32 (affine formats only)
};

__device__ __forceinline__ uint4 low_nibbles(const uint32_t (&w)[4], uint32_t offset) {
  return make_uint4(__vsub4(w[0] & 0x0F0F0F0Fu, offset), __vsub4(w[1] & 0x0F0F0F0Fu, offset),
                    __vsub4(w[2] & 0x0F0F0F0Fu, offset), __vsub4(w[3] & 0x0F0F0F0Fu, offset));
}
__device__ __forceinline__ uint4 high_nibbles(const uint32_t (&w)[4], uint32_t offset) {
  return make_uint4(__vsub4((w[0] >> 4) & 0x0F0F0F0Fu, offset), __vsub4((w[1] >> 4) & 0x0F0F0F0Fu, offset),
                    __vsub4((w[2] >> 4) & 0x0F0F0F0Fu, offset), __vsub4((w[3] >> 4) & 0x0F0F0F0Fu, offset));
}

// Bits 4k .. 4k + 3 of qh onto bit 4 of the bytes of word k (values 4k .. 4k + 3).
__device__ __forceinline__ void add_fifth_bits(uint32_t (&w)[4], uint32_t qh) {
#pragma unroll
  for (int k = 0; k < 4; ++k) w[k] |= spread_bits_to_bit4(qh >> (4 * k));
}

struct Q4_0 {
  static constexpr bool kAffine = false;
  __device__ static void decode(const uint8_t* wrow, uint32_t unit, uint4& c0, uint4& c1, Q32WMeta& m) {
    const uint8_t* blk = wrow + unit * sizeof(quant::BlockQ4_0);
    m.d = load_f16(blk);
    m.m = 0.0f;
    uint32_t w[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) w[k] = load_u32_a2(blk + 2 + 4 * k);
    c0 = low_nibbles(w, 0x08080808u);
    c1 = high_nibbles(w, 0x08080808u);
  }
};

struct Q4_1 {
  static constexpr bool kAffine = true;
  __device__ static void decode(const uint8_t* wrow, uint32_t unit, uint4& c0, uint4& c1, Q32WMeta& m) {
    const uint8_t* blk = wrow + unit * sizeof(quant::BlockQ4_1);
    const uint32_t dm = load_u32(blk);
    m.d = half_bits_to_float(dm & 0xFFFFu);
    m.m = half_bits_to_float(dm >> 16);
    uint32_t w[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) w[k] = load_u32(blk + 4 + 4 * k);
    c0 = low_nibbles(w, 0u);
    c1 = high_nibbles(w, 0u);
  }
};

// Q5_0 / Q5_1: nibbles plus bit 4 from qh (bit j: value j), values 0..15
// from the low nibbles, 16..31 from the high ones.
__device__ __forceinline__ void decode_q5(const uint32_t (&qs)[4], uint32_t qh, uint32_t offset, uint4& c0,
                                          uint4& c1) {
  uint32_t lo[4], hi[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    lo[k] = qs[k] & 0x0F0F0F0Fu;
    hi[k] = (qs[k] >> 4) & 0x0F0F0F0Fu;
  }
  add_fifth_bits(lo, qh);
  add_fifth_bits(hi, qh >> 16);
  c0 = make_uint4(__vsub4(lo[0], offset), __vsub4(lo[1], offset), __vsub4(lo[2], offset), __vsub4(lo[3], offset));
  c1 = make_uint4(__vsub4(hi[0], offset), __vsub4(hi[1], offset), __vsub4(hi[2], offset), __vsub4(hi[3], offset));
}

struct Q5_0 {
  static constexpr bool kAffine = false;
  __device__ static void decode(const uint8_t* wrow, uint32_t unit, uint4& c0, uint4& c1, Q32WMeta& m) {
    const uint8_t* blk = wrow + unit * sizeof(quant::BlockQ5_0);
    m.d = load_f16(blk);
    m.m = 0.0f;
    uint32_t qs[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) qs[k] = load_u32_a2(blk + 6 + 4 * k);
    decode_q5(qs, load_u32_a2(blk + 2), 0x10101010u, c0, c1);
  }
};

struct Q5_1 {
  static constexpr bool kAffine = true;
  __device__ static void decode(const uint8_t* wrow, uint32_t unit, uint4& c0, uint4& c1, Q32WMeta& m) {
    const uint8_t* blk = wrow + unit * sizeof(quant::BlockQ5_1);
    const uint2 head = load_u64(blk);  // d, m, qh
    m.d = half_bits_to_float(head.x & 0xFFFFu);
    m.m = half_bits_to_float(head.x >> 16);
    const uint2 q01 = load_u64(blk + 8);
    const uint2 q23 = load_u64(blk + 16);
    const uint32_t qs[4] = {q01.x, q01.y, q23.x, q23.y};
    decode_q5(qs, head.y, 0u, c0, c1);
  }
};

struct Q8_0 {
  static constexpr bool kAffine = false;
  __device__ static void decode(const uint8_t* wrow, uint32_t unit, uint4& c0, uint4& c1, Q32WMeta& m) {
    const uint8_t* blk = wrow + unit * sizeof(quant::BlockQ8_0);
    m.d = load_f16(blk);
    m.m = 0.0f;
    c0 = make_uint4(load_u32_a2(blk + 2), load_u32_a2(blk + 6), load_u32_a2(blk + 10), load_u32_a2(blk + 14));
    c1 = make_uint4(load_u32_a2(blk + 18), load_u32_a2(blk + 22), load_u32_a2(blk + 26), load_u32_a2(blk + 30));
  }
};

struct IQ4_NL {
  static constexpr bool kAffine = false;
  __device__ static void decode(const uint8_t* wrow, uint32_t unit, uint4& c0, uint4& c1, Q32WMeta& m) {
    const uint8_t* blk = wrow + unit * sizeof(quant::BlockIQ4_NL);
    m.d = load_f16(blk);
    m.m = 0.0f;
    uint32_t lo[4], hi[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const uint32_t word = load_u32_a2(blk + 2 + 4 * k);
      lo[k] = static_cast<uint32_t>(iq4_lookup4(word & 0x0F0F0F0Fu));
      hi[k] = static_cast<uint32_t>(iq4_lookup4((word >> 4) & 0x0F0F0F0Fu));
    }
    c0 = make_uint4(lo[0], lo[1], lo[2], lo[3]);
    c1 = make_uint4(hi[0], hi[1], hi[2], hi[3]);
  }
};

// |dot| <= 32 * 128 * 128 = 2^19 for every format here, so the biased
// accumulator converts exactly (exact_float_biased).
template <class D>
struct MmaQ32 {
  using WMeta = Q32WMeta;
  using AMeta = Q32AMeta;
  static constexpr bool kChained = true;
  static constexpr int kDotInit = kFloatMagicBits;

  __device__ static void decode(const uint8_t* wrow, uint32_t unit, uint4& c0, uint4& c1, WMeta& m) {
    D::decode(wrow, unit, c0, c1, m);
  }
  __device__ static uint32_t act_chunk(uint32_t unit, int c) { return 32 * unit + 16 * c; }
  __device__ static AMeta act_meta(const ActRows& act, int r, uint32_t unit) {
    AMeta a;
    a.da = act.scale(r, unit);
    a.sum = D::kAffine ? __int2float_rn(act.sum(r, unit)) : 0.0f;
    return a;
  }
  __device__ static float accumulate(float acc, int dot_biased, int, const WMeta& w, const AMeta& a) {
    const float dot = exact_float_biased(dot_biased);
    if constexpr (D::kAffine) {
      const float mins = __fmul_rn(__fmul_rn(w.m, a.da), a.sum);
      return __fadd_rn(acc, __fadd_rn(__fmul_rn(dot, __fmul_rn(w.d, a.da)), mins));
    } else {
      return __fadd_rn(acc, __fmul_rn(dot, __fmul_rn(w.d, a.da)));
    }
  }
};

}  // namespace

bool launch_matmul_mma_q32(const MatmulArgs& args, cudaStream_t stream) {
  switch (args.format) {
    case QuantFormat::Q4_0: launch_matmul_mma<MmaQ32<Q4_0>>(args, stream); return true;
    case QuantFormat::Q4_1: launch_matmul_mma<MmaQ32<Q4_1>>(args, stream); return true;
    case QuantFormat::Q5_0: launch_matmul_mma<MmaQ32<Q5_0>>(args, stream); return true;
    case QuantFormat::Q5_1: launch_matmul_mma<MmaQ32<Q5_1>>(args, stream); return true;
    case QuantFormat::Q8_0: launch_matmul_mma<MmaQ32<Q8_0>>(args, stream); return true;
    case QuantFormat::IQ4_NL: launch_matmul_mma<MmaQ32<IQ4_NL>>(args, stream); return true;
    default: return false;
  }
}

}  // namespace lamina::cudaexec::detail
