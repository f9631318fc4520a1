// Tensor-core products of the super-block formats whose work units are 32
// values (Q4_K, Q5_K, Q6_K, IQ4_XS) with Q8_K activations. A unit is the
// matvec's (matmul_kquants.cu): two 16-value chunks, each with its own
// sub-block scale, so the MMA keeps the chunk dots apart and the integer
// scaling and the f32 steps follow that kernel's operations.
#include "matmul_mma_kernel.cuh"

namespace lamina::cudaexec::detail {
namespace {

struct KAMeta {
  float da;
  int s0, s1;  // exact sums of the two chunks' activations (formats with minima)
};

__device__ __forceinline__ float scale_of(int isum, float dw, float da) {
  return __fmul_rn(__int2float_rn(isum), __fmul_rn(dw, da));
}

// Q4_K / Q5_K: unit = 16 bytes of qs: 16 values of sub-block 2j (low
// nibbles) and 16 of sub-block 2j + 1 (high nibbles).
template <bool kFifthBit>
struct MmaQ45_K {
  struct WMeta {
    float d, dmin;
    int sc_lo, sc_hi, m_lo, m_hi;
  };
  using AMeta = KAMeta;
  static constexpr bool kChained = false;
  static constexpr int kDotInit = 0;
  static constexpr uint32_t kBlockBytes = kFifthBit ? sizeof(quant::BlockQ5_K) : sizeof(quant::BlockQ4_K);
  static constexpr uint32_t kQsOffset = kFifthBit ? 48 : 16;

  __device__ static void decode(const uint8_t* wrow, uint32_t unit, uint4& c0, uint4& c1, WMeta& m) {
    const uint32_t b = unit / 8;
    const int j = static_cast<int>(unit & 7) >> 1;
    const int h = static_cast<int>(unit & 1);
    const uint8_t* blk = wrow + b * kBlockBytes;
    const uint4 head = load_u128(blk);  // d, dmin, 12 bytes of scales
    const uint4 qs = load_u128(blk + kQsOffset + 32 * j + 16 * h);
    const KScales ks = unpack_k_scales(head.y, head.z, head.w);
    m.sc_lo = k_scale(ks, 2 * j);
    m.sc_hi = k_scale(ks, 2 * j + 1);
    m.m_lo = k_min(ks, 2 * j);
    m.m_hi = k_min(ks, 2 * j + 1);
    m.d = half_bits_to_float(head.x & 0xFFFFu);
    m.dmin = half_bits_to_float(head.x >> 16);
    const uint32_t words[4] = {qs.x, qs.y, qs.z, qs.w};
    uint32_t lo[4], hi[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      lo[i] = words[i] & 0x0F0F0F0Fu;
      hi[i] = (words[i] >> 4) & 0x0F0F0F0Fu;
    }
    if constexpr (kFifthBit) {
      // Bit `sub` of qh[l] is bit 4 of value l of sub-block `sub`.
      const uint4 qh = load_u128(blk + 16 + 16 * h);
      const uint32_t high[4] = {qh.x, qh.y, qh.z, qh.w};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        lo[i] |= ((high[i] >> (2 * j)) & 0x01010101u) << 4;
        hi[i] |= ((high[i] >> (2 * j + 1)) & 0x01010101u) << 4;
      }
    }
    c0 = make_uint4(lo[0], lo[1], lo[2], lo[3]);
    c1 = make_uint4(hi[0], hi[1], hi[2], hi[3]);
  }
  __device__ static uint32_t act_chunk(uint32_t unit, int c) {
    const uint32_t b = unit / 8;
    const uint32_t j = (unit & 7) >> 1;
    const uint32_t h = unit & 1;
    return b * quant::kQK_K + 64 * j + 16 * h + 32 * c;
  }
  __device__ static AMeta act_meta(const ActRows& act, int r, uint32_t unit) {
    AMeta a;
    a.da = act.scale(r, unit / 8);
    a.s0 = act.sum(r, act_chunk(unit, 0) / 16);
    a.s1 = act.sum(r, act_chunk(unit, 1) / 16);
    return a;
  }
  // As add_scaled_mins. |msum| <= 2 * 63 * 16 * 128 converts through the
  // biased form; Q4_K's |isum| <= 2 * 63 * 16 * 15 * 128 < 2^22 as well,
  // Q5_K's (values up to 31) does not.
  __device__ static float accumulate(float acc, int d0, int d1, const WMeta& w, const AMeta& a) {
    const float fmsum = exact_float_biased(w.m_lo * a.s0 + (w.m_hi * a.s1 + kFloatMagicBits));
    float fisum;
    if constexpr (kFifthBit) {
      fisum = __int2float_rn(w.sc_lo * d0 + w.sc_hi * d1);
    } else {
      fisum = exact_float_biased(w.sc_lo * d0 + (w.sc_hi * d1 + kFloatMagicBits));
    }
    const float mins = __fmul_rn(fmsum, __fmul_rn(w.dmin, a.da));
    return __fadd_rn(acc, __fsub_rn(__fmul_rn(fisum, __fmul_rn(w.d, a.da)), mins));
  }
};

// Q6_K: unit t of half `half` takes ql bytes 16t .. 16t + 15 of the half:
// low nibbles are values 16t + l (scale a), high nibbles 64 + 16t + l
// (scale b); their 2 high bits come from qh bytes 16 (t % 2) + l.
struct MmaQ6_K {
  struct WMeta {
    float d;
    int sc_a, sc_b;
  };
  using AMeta = KAMeta;
  static constexpr bool kChained = false;
  static constexpr int kDotInit = 0;

  __device__ static void decode(const uint8_t* wrow, uint32_t unit, uint4& c0, uint4& c1, WMeta& m) {
    const uint32_t b = unit / 8;
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
    m.sc_a = __ldg(scales);
    m.sc_b = __ldg(scales + 4);
    m.d = load_f16(blk + 208);
    const int shift = 2 * (t >> 1);
    uint32_t wa[4], wb[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const uint32_t va = (ql[i] & 0x0F0F0F0Fu) | (((qh[i] >> shift) & 0x03030303u) << 4);
      const uint32_t vb = ((ql[i] >> 4) & 0x0F0F0F0Fu) | (((qh[i] >> (shift + 4)) & 0x03030303u) << 4);
      wa[i] = __vsub4(va, 0x20202020u);
      wb[i] = __vsub4(vb, 0x20202020u);
    }
    c0 = make_uint4(wa[0], wa[1], wa[2], wa[3]);
    c1 = make_uint4(wb[0], wb[1], wb[2], wb[3]);
  }
  __device__ static uint32_t act_chunk(uint32_t unit, int c) {
    const uint32_t b = unit / 8;
    const uint32_t half = (unit & 4) >> 2;
    const uint32_t t = unit & 3;
    return b * quant::kQK_K + 128 * half + 16 * t + 64 * c;
  }
  __device__ static AMeta act_meta(const ActRows& act, int r, uint32_t unit) {
    AMeta a;
    a.da = act.scale(r, unit / 8);
    a.s0 = 0;
    a.s1 = 0;
    return a;
  }
  __device__ static float accumulate(float acc, int d0, int d1, const WMeta& w, const AMeta& a) {
    return __fadd_rn(acc, scale_of(w.sc_a * d0 + w.sc_b * d1, w.d, a.da));
  }
};

// IQ4_XS: unit = one 32-value sub-block of codebook indices, one scale.
struct MmaIQ4_XS {
  struct WMeta {
    float d;
    int scale;
  };
  using AMeta = KAMeta;
  static constexpr bool kChained = true;
  static constexpr int kDotInit = 0;

  __device__ static void decode(const uint8_t* wrow, uint32_t unit, uint4& c0, uint4& c1, WMeta& m) {
    const uint32_t b = unit / 8;
    const int sub = static_cast<int>(unit & 7);
    const uint8_t* blk = wrow + b * sizeof(quant::BlockIQ4_XS);
    const uint2 head = load_u64(blk);  // d, scales_h, scales_l[4]
    const uint2 q01 = load_u64(blk + 8 + 16 * sub);
    const uint2 q23 = load_u64(blk + 16 + 16 * sub);
    m.d = half_bits_to_float(head.x & 0xFFFFu);
    const int low = (byte_at(head.y, sub >> 1) >> (4 * (sub & 1))) & 0xF;
    const int high = static_cast<int>((head.x >> (16 + 2 * sub)) & 3u);
    m.scale = (low | (high << 4)) - 32;
    const uint32_t words[4] = {q01.x, q01.y, q23.x, q23.y};
    uint32_t lo[4], hi[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      lo[i] = static_cast<uint32_t>(iq4_lookup4(words[i] & 0x0F0F0F0Fu));
      hi[i] = static_cast<uint32_t>(iq4_lookup4((words[i] >> 4) & 0x0F0F0F0Fu));
    }
    c0 = make_uint4(lo[0], lo[1], lo[2], lo[3]);
    c1 = make_uint4(hi[0], hi[1], hi[2], hi[3]);
  }
  __device__ static uint32_t act_chunk(uint32_t unit, int c) { return 32 * unit + 16 * c; }
  __device__ static AMeta act_meta(const ActRows& act, int r, uint32_t unit) {
    AMeta a;
    a.da = act.scale(r, unit / 8);
    a.s0 = 0;
    a.s1 = 0;
    return a;
  }
  __device__ static float accumulate(float acc, int dot, int, const WMeta& w, const AMeta& a) {
    return __fadd_rn(acc, scale_of(w.scale * dot, w.d, a.da));
  }
};

}  // namespace

bool launch_matmul_mma_kquants(const MatmulArgs& args, cudaStream_t stream) {
  switch (args.format) {
    case QuantFormat::Q4_K: launch_matmul_mma<MmaQ45_K<false>>(args, stream); return true;
    case QuantFormat::Q5_K: launch_matmul_mma<MmaQ45_K<true>>(args, stream); return true;
    case QuantFormat::Q6_K: launch_matmul_mma<MmaQ6_K>(args, stream); return true;
    case QuantFormat::IQ4_XS: launch_matmul_mma<MmaIQ4_XS>(args, stream); return true;
    default: return false;
  }
}

}  // namespace lamina::cudaexec::detail
