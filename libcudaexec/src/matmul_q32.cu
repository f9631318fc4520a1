// Matrix products of the 32-value block formats (Q4_0, Q4_1, Q5_0, Q5_1,
// Q8_0, IQ4_NL) with Q8_0/Q8_1 activations: one block per work unit.
//
// Each decoder turns a block into 8 words of int8 values (word k holds values
// 4k .. 4k + 3) plus its scale and minimum; the dot with the activations is
// __dp4a and exact. Offsets (Q4_0's -8, Q5_0's -16) and minima use the
// activation block's exact integer sum.
#include "matvec_kernel.cuh"

namespace lamina::cudaexec::detail {
namespace {

// How a block's integer values map to its values, besides the scale d.
enum class ZeroPoint {
  kNone,      // d * q
  kMinus8,    // d * (q - 8)
  kMinus16,   // d * (q - 16)
  kMinimum,   // d * q + m
};

struct Q32Block {
  int lo[4];  // values 0..15
  int hi[4];  // values 16..31
  float d;
  float m;  // minimum (affine formats only)
};

// A nibble block: byte j holds value j (low nibble) and j + 16 (high).
__device__ __forceinline__ void split_nibbles(uint32_t word, int k, Q32Block& b) {
  b.lo[k] = static_cast<int>(word & 0x0F0F0F0Fu);
  b.hi[k] = static_cast<int>((word >> 4) & 0x0F0F0F0Fu);
}

struct Q4_0 {
  static constexpr uint32_t kBlockBytes = sizeof(quant::BlockQ4_0);
  static constexpr ZeroPoint kZero = ZeroPoint::kMinus8;
  __device__ static Q32Block decode(const uint8_t* blk) {
    Q32Block b;
    b.d = load_f16(blk);
    b.m = 0.0f;
#pragma unroll
    for (int k = 0; k < 4; ++k) split_nibbles(load_u32_a2(blk + 2 + 4 * k), k, b);
    return b;
  }
};

struct Q4_1 {
  static constexpr uint32_t kBlockBytes = sizeof(quant::BlockQ4_1);
  static constexpr ZeroPoint kZero = ZeroPoint::kMinimum;
  __device__ static Q32Block decode(const uint8_t* blk) {
    Q32Block b;
    const uint32_t dm = load_u32(blk);
    b.d = half_bits_to_float(dm & 0xFFFFu);
    b.m = half_bits_to_float(dm >> 16);
#pragma unroll
    for (int k = 0; k < 4; ++k) split_nibbles(load_u32(blk + 4 + 4 * k), k, b);
    return b;
  }
};

// Bit j of qh is bit 4 of value j.
__device__ __forceinline__ void add_q5_high_bits(uint32_t qh, Q32Block& b) {
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    b.lo[k] |= static_cast<int>(spread_bits_to_bit4(qh >> (4 * k)));
    b.hi[k] |= static_cast<int>(spread_bits_to_bit4(qh >> (16 + 4 * k)));
  }
}

struct Q5_0 {
  static constexpr uint32_t kBlockBytes = sizeof(quant::BlockQ5_0);
  static constexpr ZeroPoint kZero = ZeroPoint::kMinus16;
  __device__ static Q32Block decode(const uint8_t* blk) {
    Q32Block b;
    b.d = load_f16(blk);
    b.m = 0.0f;
#pragma unroll
    for (int k = 0; k < 4; ++k) split_nibbles(load_u32_a2(blk + 6 + 4 * k), k, b);
    add_q5_high_bits(load_u32_a2(blk + 2), b);
    return b;
  }
};

struct Q5_1 {
  static constexpr uint32_t kBlockBytes = sizeof(quant::BlockQ5_1);
  static constexpr ZeroPoint kZero = ZeroPoint::kMinimum;
  __device__ static Q32Block decode(const uint8_t* blk) {
    Q32Block b;
    const uint2 head = load_u64(blk);  // d, m, qh
    b.d = half_bits_to_float(head.x & 0xFFFFu);
    b.m = half_bits_to_float(head.x >> 16);
    const uint2 q01 = load_u64(blk + 8);
    const uint2 q23 = load_u64(blk + 16);
    split_nibbles(q01.x, 0, b);
    split_nibbles(q01.y, 1, b);
    split_nibbles(q23.x, 2, b);
    split_nibbles(q23.y, 3, b);
    add_q5_high_bits(head.y, b);
    return b;
  }
};

struct Q8_0 {
  static constexpr uint32_t kBlockBytes = sizeof(quant::BlockQ8_0);
  static constexpr ZeroPoint kZero = ZeroPoint::kNone;
  __device__ static Q32Block decode(const uint8_t* blk) {
    Q32Block b;
    b.d = load_f16(blk);
    b.m = 0.0f;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      b.lo[k] = static_cast<int>(load_u32_a2(blk + 2 + 4 * k));
      b.hi[k] = static_cast<int>(load_u32_a2(blk + 18 + 4 * k));
    }
    return b;
  }
};

struct IQ4_NL {
  static constexpr uint32_t kBlockBytes = sizeof(quant::BlockIQ4_NL);
  static constexpr ZeroPoint kZero = ZeroPoint::kNone;
  __device__ static Q32Block decode(const uint8_t* blk) {
    Q32Block b;
    b.d = load_f16(blk);
    b.m = 0.0f;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const uint32_t word = load_u32_a2(blk + 2 + 4 * k);
      b.lo[k] = iq4_lookup4(word & 0x0F0F0F0Fu);
      b.hi[k] = iq4_lookup4((word >> 4) & 0x0F0F0F0Fu);
    }
    return b;
  }
};

template <class F>
struct Q32Kernel {
  template <int R>
  __device__ static void accumulate(const uint8_t* wrow, uint32_t block, const ActRows& act, int nr,
                                    float (&acc)[R]) {
    const Q32Block w = F::decode(wrow + block * F::kBlockBytes);
#pragma unroll
    for (int r = 0; r < R; ++r) {
      if (r < nr) {
        const int dot = dot16(w.lo, act.qs16(r, 32 * block)) + dot16(w.hi, act.qs16(r, 32 * block + 16));
        const float da = act.scale(r, block);
        if constexpr (F::kZero == ZeroPoint::kMinimum) {
          const float mins = __fmul_rn(__fmul_rn(w.m, da), __int2float_rn(act.sum(r, block)));
          acc[r] = __fadd_rn(acc[r], __fadd_rn(__fmul_rn(__int2float_rn(dot), __fmul_rn(w.d, da)), mins));
        } else if constexpr (F::kZero == ZeroPoint::kMinus8) {
          acc[r] = add_scaled(acc[r], dot - 8 * act.sum(r, block), w.d, da);
        } else if constexpr (F::kZero == ZeroPoint::kMinus16) {
          acc[r] = add_scaled(acc[r], dot - 16 * act.sum(r, block), w.d, da);
        } else {
          acc[r] = add_scaled(acc[r], dot, w.d, da);
        }
      }
    }
  }
};

template <class F>
void launch(const MatmulArgs& args, cudaStream_t stream) {
  launch_matvec<Q32Kernel<F>>(args, quant::kQK, stream);
}

}  // namespace

bool launch_matmul_q32(const MatmulArgs& args, cudaStream_t stream) {
  switch (args.format) {
    case QuantFormat::Q4_0: launch<Q4_0>(args, stream); return true;
    case QuantFormat::Q4_1: launch<Q4_1>(args, stream); return true;
    case QuantFormat::Q5_0: launch<Q5_0>(args, stream); return true;
    case QuantFormat::Q5_1: launch<Q5_1>(args, stream); return true;
    case QuantFormat::Q8_0: launch<Q8_0>(args, stream); return true;
    case QuantFormat::IQ4_NL: launch<IQ4_NL>(args, stream); return true;
    default: return false;
  }
}

}  // namespace lamina::cudaexec::detail
