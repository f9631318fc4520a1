// Matrix products of F32, F16 and BF16 weights with f32 activations: the
// weights widen to f32 exactly and every product is one fused multiply-add
// into the lane's sum. Units are 8 values (one 16-byte load of F16/BF16, two
// of F32) when the row length allows, single values otherwise.
#include "matvec_kernel.cuh"

namespace lamina::cudaexec::detail {
namespace {

template <QuantFormat F>
__device__ __forceinline__ void load8(const uint8_t* p, float (&w)[8]) {
  if constexpr (F == QuantFormat::F32) {
    const uint4 a = load_u128(p);
    const uint4 b = load_u128(p + 16);
    const uint32_t bits[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
#pragma unroll
    for (int i = 0; i < 8; ++i) w[i] = __uint_as_float(bits[i]);
  } else {
    const uint4 a = load_u128(p);
    const uint32_t pairs[4] = {a.x, a.y, a.z, a.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      if constexpr (F == QuantFormat::F16) {
        w[2 * i] = half_bits_to_float(pairs[i] & 0xFFFFu);
        w[2 * i + 1] = half_bits_to_float(pairs[i] >> 16);
      } else {
        w[2 * i] = bf16_bits_to_float(pairs[i] & 0xFFFFu);
        w[2 * i + 1] = bf16_bits_to_float(pairs[i] >> 16);
      }
    }
  }
}

template <QuantFormat F>
__device__ __forceinline__ float load1(const uint8_t* row, uint32_t i) {
  if constexpr (F == QuantFormat::F32) {
    return __uint_as_float(load_u32(row + 4 * i));
  } else if constexpr (F == QuantFormat::F16) {
    return half_bits_to_float(load_u16(row + 2 * i));
  } else {
    return bf16_bits_to_float(load_u16(row + 2 * i));
  }
}

template <QuantFormat F>
inline constexpr uint32_t kElemBytes = F == QuantFormat::F32 ? 4 : 2;

template <QuantFormat F, int kWidth>
struct FloatKernel {
  template <int R>
  __device__ static void accumulate(const uint8_t* wrow, uint32_t unit, const ActRows& act, int nr,
                                    float (&acc)[R]) {
    if constexpr (kWidth == 8) {
      float w[8];
      load8<F>(wrow + unit * 8 * kElemBytes<F>, w);
#pragma unroll
      for (int r = 0; r < R; ++r) {
        if (r < nr) {
          const float4 a = act.f32x4(r, 8 * unit);
          const float4 b = act.f32x4(r, 8 * unit + 4);
          const float x[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
          float s = acc[r];
#pragma unroll
          for (int i = 0; i < 8; ++i) s = __fmaf_rn(w[i], x[i], s);
          acc[r] = s;
        }
      }
    } else {
      const float w = load1<F>(wrow, unit);
#pragma unroll
      for (int r = 0; r < R; ++r) {
        if (r < nr) acc[r] = __fmaf_rn(w, act.f32(r, unit), acc[r]);
      }
    }
  }
};

template <QuantFormat F>
void launch(const MatmulArgs& args, cudaStream_t stream) {
  // Rows start 16-byte aligned (for 16-byte loads) when n_in is a multiple of 8.
  if (args.n_in % 8 == 0) {
    launch_matvec<FloatKernel<F, 8>>(args, 8, stream);
  } else {
    launch_matvec<FloatKernel<F, 1>>(args, 1, stream);
  }
}

}  // namespace

bool launch_matmul_float(const MatmulArgs& args, cudaStream_t stream) {
  switch (args.format) {
    case QuantFormat::F32: launch<QuantFormat::F32>(args, stream); return true;
    case QuantFormat::F16: launch<QuantFormat::F16>(args, stream); return true;
    case QuantFormat::BF16: launch<QuantFormat::BF16>(args, stream); return true;
    default: return false;
  }
}

}  // namespace lamina::cudaexec::detail
