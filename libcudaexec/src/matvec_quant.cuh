// The one-row products of quantized weights (decode), in the arithmetic
// contract of weight_formats.cuh, so each output has the bits the
// tensor-core kernel gives it in a batch of any size.
//
// One warp per output row. 32-value block formats: lane l takes block
// b0 + l of each step of 32 blocks, computes its exact integer dot and its
// scale product, then each group of 8 lanes (one segment) chains its blocks
// in order through shuffles, and the 4 segments are added to the total in
// order. Super-block formats: the lanes of a super-block each take a work
// unit (the layout's natural 16-byte slice), their integer sums are added
// exactly across those lanes, and the super-blocks' terms join the total in
// order.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "launch.cuh"
#include "matvec_kernel.cuh"
#include "weight_formats.cuh"

namespace lamina::cudaexec::detail {

// Warp-level start shared by the quantized matvecs: the output row this warp
// computes, its weights prefetched into L2 before the wait for the
// activations' producer.
__device__ __forceinline__ const uint8_t* matvec_row_start(const MatvecParams& p, uint32_t o, int lane) {
  const uint8_t* wrow = p.w + static_cast<std::size_t>(o) * p.w_row_bytes;
  for (std::size_t at = static_cast<std::size_t>(lane) * 128; at < p.w_row_bytes; at += 32 * 128) {
    asm volatile("prefetch.global.L2 [%0];" ::"l"(wrow + at));
  }
  return wrow;
}

__device__ __forceinline__ void matvec_store(const MatvecParams& p, uint32_t o, float total) {
  if (p.bias != nullptr) total = __fadd_rn(total, p.bias[o]);
  if (p.residual != nullptr) total = __fadd_rn(total, p.residual[o]);
  p.y[o] = total;
}

template <class F>
__global__ void __launch_bounds__(kMatvecWarps * 32) matvec_q32_kernel(const MatvecParams p) {
  const int lane = static_cast<int>(threadIdx.x & 31u);
  const uint32_t o = blockIdx.x * kMatvecWarps + (threadIdx.x >> 5);
  if (o >= p.n_out) return;
  const uint8_t* wrow = matvec_row_start(p, o, lane);
  enter_dependent_kernel();
  const ActRows& act = p.act;
  const uint32_t n_blocks = p.n_units;
  const int first = lane & ~7;

  float total = -0.0f;
  for (uint32_t b0 = 0; b0 < n_blocks; b0 += 32) {
    const uint32_t b = b0 + static_cast<uint32_t>(lane);
    float fdot = 0.0f, dwda = 0.0f, fsum = 0.0f, mwda = 0.0f;
    if (b < n_blocks) {
      const uint8_t* blk = wrow + b * F::kBlockBytes;
      const int4 a_lo = act.qs16(0, 32 * b);
      const int4 a_hi = act.qs16(0, 32 * b + 16);
      const int a_lo_w[4] = {a_lo.x, a_lo.y, a_lo.z, a_lo.w};
      const int a_hi_w[4] = {a_hi.x, a_hi.y, a_hi.z, a_hi.w};
      int dot = 0;
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        uint32_t lo, hi;
        F::template word<GlobalMem>(blk, k, lo, hi);
        dot = __dp4a(static_cast<int>(lo), a_lo_w[k], dot);
        dot = __dp4a(static_cast<int>(hi), a_hi_w[k], dot);
      }
      const float da = act.scale(0, b);
      fdot = __int2float_rn(dot);
      dwda = __fmul_rn(F::template scale<GlobalMem>(blk), da);
      if constexpr (F::kMin) {
        fsum = __int2float_rn(act.sum(0, b));
        mwda = __fmul_rn(F::template min_value<GlobalMem>(blk), da);
      }
    }
    // Lane first + i holds block b0 + first + i of this lane's segment.
    float seg = 0.0f;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const float f = __shfl_sync(0xFFFFFFFFu, fdot, first + i);
      const float s = __shfl_sync(0xFFFFFFFFu, dwda, first + i);
      if constexpr (F::kMin) {
        const float fs = __shfl_sync(0xFFFFFFFFu, fsum, first + i);
        const float ms = __shfl_sync(0xFFFFFFFFu, mwda, first + i);
        if (b0 + first + i < n_blocks) seg = block_step_min_scaled(seg, f, s, fs, ms);
      } else {
        if (b0 + first + i < n_blocks) seg = block_step_scaled(seg, f, s);
      }
    }
#pragma unroll
    for (int g = 0; g < 4; ++g) {
      const float sg = __shfl_sync(0xFFFFFFFFu, seg, 8 * g);
      if (b0 + 8 * g < n_blocks) total = __fadd_rn(total, sg);
    }
  }
  if (lane == 0) matvec_store(p, o, total);
}

// U: a super-block format's work units, with
//   kUnits                       units per super-block (a power of two <= 32)
//   unit_sums(wrow, unit, act)   the unit's exact (isum, msum) with activation row 0
// and F its weight_formats.cuh description (d, dmin, kMin).
template <class U, class F>
__global__ void __launch_bounds__(kMatvecWarps * 32) matvec_superblock_kernel(const MatvecParams p) {
  constexpr int kUnits = static_cast<int>(U::kUnits);
  constexpr int kPerStep = 32 / kUnits;  // super-blocks per step
  const int lane = static_cast<int>(threadIdx.x & 31u);
  const uint32_t o = blockIdx.x * kMatvecWarps + (threadIdx.x >> 5);
  if (o >= p.n_out) return;
  const uint8_t* wrow = matvec_row_start(p, o, lane);
  enter_dependent_kernel();
  const ActRows& act = p.act;
  const uint32_t n_sb = p.n_units / kUnits;
  const int g = lane / kUnits;

  float total = -0.0f;
  for (uint32_t sb0 = 0; sb0 < n_sb; sb0 += kPerStep) {
    const uint32_t sb = sb0 + static_cast<uint32_t>(g);
    int2 sums = make_int2(0, 0);
    if (sb < n_sb) sums = U::unit_sums(wrow, sb * kUnits + static_cast<uint32_t>(lane % kUnits), act);
#pragma unroll
    for (int off = kUnits / 2; off > 0; off >>= 1) {
      sums.x += __shfl_xor_sync(0xFFFFFFFFu, sums.x, off);
      sums.y += __shfl_xor_sync(0xFFFFFFFFu, sums.y, off);
    }
    float t = 0.0f;
    if (sb < n_sb) {
      const uint8_t* blk = wrow + sb * F::kBlockBytes;
      const float da = act.scale(0, sb);
      if constexpr (F::kMin) {
        t = superblock_term_min(sums.x, __int2float_rn(sums.y), F::template d<GlobalMem>(blk),
                                F::template dmin<GlobalMem>(blk), da);
      } else {
        t = superblock_term(sums.x, F::template d<GlobalMem>(blk), da);
      }
    }
#pragma unroll
    for (int k = 0; k < kPerStep; ++k) {
      const float tk = __shfl_sync(0xFFFFFFFFu, t, k * kUnits);
      if (sb0 + k < n_sb) total = __fadd_rn(total, tk);
    }
  }
  if (lane == 0) matvec_store(p, o, total);
}

template <class F>
void launch_matvec_q32(const MatmulArgs& args, cudaStream_t stream) {
  const MatvecParams p = matvec_params(args, 32);
  launch_kernel(matvec_q32_kernel<F>, dim3((args.n_out + kMatvecWarps - 1) / kMatvecWarps), dim3(kMatvecWarps * 32),
                0, stream, p);
}

template <class U, class F>
void launch_matvec_superblock(const MatmulArgs& args, cudaStream_t stream) {
  const MatvecParams p = matvec_params(args, quant::kQK_K / U::kUnits);
  launch_kernel(matvec_superblock_kernel<U, F>, dim3((args.n_out + kMatvecWarps - 1) / kMatvecWarps),
                dim3(kMatvecWarps * 32), 0, stream, p);
}

}  // namespace lamina::cudaexec::detail
