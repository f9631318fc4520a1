// One-row products of the 256-value super-block formats (Q2_K, Q3_K, Q4_K,
// Q5_K, Q6_K, IQ4_XS) with Q8_K activations (matvec_superblock_kernel).
//
// A super-block is split into work units that neighbouring lanes take, so a
// warp reads each block's bytes side by side: 32 values per unit (Q4_K, Q5_K,
// Q6_K, IQ4_XS: 16 bytes of packed values, one 16-byte load where the block
// size allows) or 64 (Q2_K, Q3_K, whose 2-bit values of 4 sub-blocks share a
// byte). A unit's sums are integers: __dp4a per 16 values times the sub-block
// scale, and minima through the activations' 16-value sums.
#include "matvec_quant.cuh"

namespace lamina::cudaexec::detail {
namespace {

// The activation values of a unit at `offset`, dotted with w.
__device__ __forceinline__ int act_dot16(const ActRows& act, uint32_t offset, const int (&w)[4]) {
  return dot16(w, act.qs16(0, offset));
}

struct UnitsQ2_K {
  static constexpr uint32_t kUnits = 4;  // 64 values: 16 bytes of qs, 4 sub-blocks
  __device__ static int2 unit_sums(const uint8_t* wrow, uint32_t unit, const ActRows& act) {
    const uint32_t b = unit / kUnits;
    const int half = static_cast<int>(unit & 2) >> 1;
    const int part = static_cast<int>(unit & 1);
    const uint8_t* blk = wrow + b * sizeof(quant::BlockQ2_K);
    // Scales of sub-blocks 8 * half .. 8 * half + 7 (blocks are only 4-byte aligned).
    const uint32_t scales_lo = load_u32(blk + 8 * half);
    const uint32_t scales_hi = load_u32(blk + 8 * half + 4);
    uint32_t q[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) q[i] = load_u32(blk + 16 + 32 * half + 16 * part + 4 * i);
    // Group s: bits 2s of the bytes, sub-block 8 * half + 2s + part.
    const uint32_t base = b * quant::kQK_K + 128 * half + 16 * part;
    const uint32_t group = b * 16 + 8 * half + part;
    int isum = 0, msum = 0;
#pragma unroll
    for (int s = 0; s < 4; ++s) {
      const int sc = byte_at(s < 2 ? scales_lo : scales_hi, part + 2 * (s & 1));
      int w[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) w[i] = static_cast<int>((q[i] >> (2 * s)) & 0x03030303u);
      isum += (sc & 0xF) * act_dot16(act, base + 32 * s, w);
      msum += (sc >> 4) * act.sum(0, group + 2 * s);
    }
    return make_int2(isum, msum);
  }
};

struct UnitsQ3_K {
  static constexpr uint32_t kUnits = 4;  // as Q2_K, plus the high bits from hmask
  __device__ static int2 unit_sums(const uint8_t* wrow, uint32_t unit, const ActRows& act) {
    const uint32_t b = unit / kUnits;
    const int half = static_cast<int>(unit & 2) >> 1;
    const int part = static_cast<int>(unit & 1);
    const uint8_t* blk = wrow + b * sizeof(quant::BlockQ3_K);
    uint32_t q[4], h[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      h[i] = load_u32_a2(blk + 16 * part + 4 * i);
      q[i] = load_u32_a2(blk + 32 + 32 * half + 16 * part + 4 * i);
    }
    const uint32_t s0 = load_u32_a2(blk + 96);
    const uint32_t s1 = load_u32_a2(blk + 100);
    const uint32_t s2 = load_u32_a2(blk + 104);
    // Value = low 2 bits + 4 * hmask bit - 4; hmask bit 4 * half + s.
    const uint32_t base = b * quant::kQK_K + 128 * half + 16 * part;
    int isum = 0;
#pragma unroll
    for (int s = 0; s < 4; ++s) {
      int w[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const uint32_t low = (q[i] >> (2 * s)) & 0x03030303u;
        const uint32_t high = ((h[i] >> (4 * half + s)) & 0x01010101u) << 2;
        w[i] = static_cast<int>(__vsub4(low | high, 0x04040404u));
      }
      isum += q3k_scale(s0, s1, s2, 8 * half + part + 2 * s) * act_dot16(act, base + 32 * s, w);
    }
    return make_int2(isum, 0);
  }
};

// Q4_K and Q5_K: unit = 16 bytes of qs = 16 values of sub-block 2j (low
// nibbles) and 16 of sub-block 2j + 1 (high nibbles).
template <bool kFifthBit>
struct UnitsQ45_K {
  static constexpr uint32_t kUnits = 8;
  static constexpr uint32_t kBlockBytes = kFifthBit ? sizeof(quant::BlockQ5_K) : sizeof(quant::BlockQ4_K);
  static constexpr uint32_t kQsOffset = kFifthBit ? 48 : 16;
  __device__ static int2 unit_sums(const uint8_t* wrow, uint32_t unit, const ActRows& act) {
    const uint32_t b = unit / kUnits;
    const int j = static_cast<int>(unit & 7) >> 1;
    const int h = static_cast<int>(unit & 1);
    const uint8_t* blk = wrow + b * kBlockBytes;
    const uint4 head = load_u128(blk);  // d, dmin, 12 bytes of scales
    const uint4 qs = load_u128(blk + kQsOffset + 32 * j + 16 * h);
    const KScales ks = unpack_k_scales(head.y, head.z, head.w);
    const uint32_t words[4] = {qs.x, qs.y, qs.z, qs.w};
    int lo[4], hi[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      lo[i] = static_cast<int>(words[i] & 0x0F0F0F0Fu);
      hi[i] = static_cast<int>((words[i] >> 4) & 0x0F0F0F0Fu);
    }
    if constexpr (kFifthBit) {
      // Bit `sub` of qh[l] is bit 4 of value l of sub-block `sub`.
      const uint4 qh = load_u128(blk + 16 + 16 * h);
      const uint32_t high[4] = {qh.x, qh.y, qh.z, qh.w};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        lo[i] |= static_cast<int>(((high[i] >> (2 * j)) & 0x01010101u) << 4);
        hi[i] |= static_cast<int>(((high[i] >> (2 * j + 1)) & 0x01010101u) << 4);
      }
    }
    const uint32_t base = b * quant::kQK_K + 64 * j + 16 * h;
    const uint32_t group = b * 16 + 4 * j + h;
    const int isum = k_scale(ks, 2 * j) * act_dot16(act, base, lo) + k_scale(ks, 2 * j + 1) * act_dot16(act, base + 32, hi);
    const int msum = k_min(ks, 2 * j) * act.sum(0, group) + k_min(ks, 2 * j + 1) * act.sum(0, group + 2);
    return make_int2(isum, msum);
  }
};

// Q6_K: unit t of half `half` takes ql bytes 16t .. 16t + 15 of the half:
// their low nibbles are values 16t + l (sub-block 8 * half + t), their high
// nibbles values 64 + 16t + l (sub-block 8 * half + 4 + t); the 2 high bits
// of both come from qh bytes 16 (t % 2) + l.
struct UnitsQ6_K {
  static constexpr uint32_t kUnits = 8;
  __device__ static int2 unit_sums(const uint8_t* wrow, uint32_t unit, const ActRows& act) {
    const uint32_t b = unit / kUnits;
    const int half = static_cast<int>(unit & 4) >> 2;
    const int t = static_cast<int>(unit & 3);
    const uint8_t* blk = wrow + b * sizeof(quant::BlockQ6_K);
    uint32_t ql[4], qh[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      ql[i] = load_u32_a2(blk + 64 * half + 16 * t + 4 * i);
      qh[i] = load_u32_a2(blk + 128 + 32 * half + 16 * (t & 1) + 4 * i);
    }
    const auto* scales = reinterpret_cast<const signed char*>(blk + 192 + 8 * half + t);
    const int sc_a = __ldg(scales);
    const int sc_b = __ldg(scales + 4);
    const int shift = 2 * (t >> 1);
    int wa[4], wb[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const uint32_t va = (ql[i] & 0x0F0F0F0Fu) | (((qh[i] >> shift) & 0x03030303u) << 4);
      const uint32_t vb = ((ql[i] >> 4) & 0x0F0F0F0Fu) | (((qh[i] >> (shift + 4)) & 0x03030303u) << 4);
      wa[i] = static_cast<int>(__vsub4(va, 0x20202020u));
      wb[i] = static_cast<int>(__vsub4(vb, 0x20202020u));
    }
    const uint32_t base = b * quant::kQK_K + 128 * half + 16 * t;
    return make_int2(sc_a * act_dot16(act, base, wa) + sc_b * act_dot16(act, base + 64, wb), 0);
  }
};

// IQ4_XS: unit = one 32-value sub-block, 16 bytes of codebook indices.
struct UnitsIQ4_XS {
  static constexpr uint32_t kUnits = 8;
  __device__ static int2 unit_sums(const uint8_t* wrow, uint32_t unit, const ActRows& act) {
    const uint32_t b = unit / kUnits;
    const int sub = static_cast<int>(unit & 7);
    const uint8_t* blk = wrow + b * sizeof(quant::BlockIQ4_XS);
    const uint2 q01 = load_u64(blk + 8 + 16 * sub);
    const uint2 q23 = load_u64(blk + 16 + 16 * sub);
    const uint32_t words[4] = {q01.x, q01.y, q23.x, q23.y};
    int lo[4], hi[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      lo[i] = iq4_lookup4(words[i] & 0x0F0F0F0Fu);
      hi[i] = iq4_lookup4((words[i] >> 4) & 0x0F0F0F0Fu);
    }
    const uint32_t base = b * quant::kQK_K + 32 * sub;
    uint32_t scales[4];
    FmtIQ4_XS::sub_scales<GlobalMem>(blk, scales);
    const int scale = scale_byte(scales, sub);
    return make_int2(scale * (act_dot16(act, base, lo) + act_dot16(act, base + 16, hi)), 0);
  }
};

}  // namespace

bool launch_matmul_kquants(const MatmulArgs& args, cudaStream_t stream) {
  switch (args.format) {
    case QuantFormat::Q2_K: launch_matvec_superblock<UnitsQ2_K, FmtQ2_K>(args, stream); return true;
    case QuantFormat::Q3_K: launch_matvec_superblock<UnitsQ3_K, FmtQ3_K>(args, stream); return true;
    case QuantFormat::Q4_K: launch_matvec_superblock<UnitsQ45_K<false>, FmtQ4_K>(args, stream); return true;
    case QuantFormat::Q5_K: launch_matvec_superblock<UnitsQ45_K<true>, FmtQ5_K>(args, stream); return true;
    case QuantFormat::Q6_K: launch_matvec_superblock<UnitsQ6_K, FmtQ6_K>(args, stream); return true;
    case QuantFormat::IQ4_XS: launch_matvec_superblock<UnitsIQ4_XS, FmtIQ4_XS>(args, stream); return true;
    default: return false;
  }
}

}  // namespace lamina::cudaexec::detail
