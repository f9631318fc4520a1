// The one-row products of quantized weights (decode), in the arithmetic
// contract of weight_formats.cuh, so each output has the bits the
// tensor-core kernel gives it in a batch of any size.
//
// One warp per output row. 32-value block formats: lane l takes blocks
// b0 + l, b0 + 32 + l, .. of each step of 32 * kMatvecBatch blocks, computes
// their scaled dots, and the chain then runs through the step's blocks in
// order (every lane, from the terms in shared memory). Super-block formats: the lanes of a super-block each take a work
// unit (the layout's natural 16-byte slice), their integer sums are added
// exactly across those lanes, and the super-blocks join the total in order.
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

// A Q8_0 block (34 bytes, so only 2-byte aligned) read as the nine aligned
// words from its start rounded down to 4 bytes. Lanes 34 bytes apart reading
// 2 bytes at a time cost the L1 a wavefront per cache line touched for each
// of 17 loads, which held the one-row product near 60% of the copy
// bandwidth; nine 4-byte loads give the same bytes, shifted into place.
// (The ninth word may reach 2 bytes past the block: the next block, or the
// weights' tail slack.)
struct AlignedBlockQ8_0 {
  uint32_t w[9];
  uint32_t shift;  // the block's start within w[0], in bits: 0 or 16

  __device__ explicit AlignedBlockQ8_0(const uint8_t* blk) {
    const auto at = reinterpret_cast<uintptr_t>(blk);
    const auto* p = reinterpret_cast<const unsigned int*>(at & ~uintptr_t{3});
    shift = static_cast<uint32_t>(at & 3u) * 8u;
#pragma unroll
    for (int i = 0; i < 9; ++i) w[i] = __ldg(p + i);
  }
  __device__ uint32_t scale_bits() const { return (w[0] >> shift) & 0xFFFFu; }
  // qs bytes 4k .. 4k + 3 (block bytes 2 + 4k ..), k < 8.
  __device__ uint32_t qs_word(int k) const { return __funnelshift_rc(w[k], w[k + 1], 16u + shift); }
};

// Steps of each kernel whose loads are issued together (memory-level
// parallelism: a warp keeps this many steps' bytes in flight).
inline constexpr int kMatvecBatch = 4;

template <class F>
__global__ void __launch_bounds__(kMatvecWarps * 32) matvec_q32_kernel(const MatvecParams batch) {
  MatvecParams p = batch.batch_entry();
  // Per warp, the (scaled dot, activation scale) of each block of a step,
  // for the chain that runs through them in order.
  __shared__ float2 terms[kMatvecWarps][32 * kMatvecBatch];
  const int lane = static_cast<int>(threadIdx.x & 31u);
  const int warp = static_cast<int>(threadIdx.x >> 5);
  const uint32_t o = blockIdx.x * kMatvecWarps + warp;
  if (o >= p.n_out) return;
  const uint8_t* wrow = matvec_row_start(p, o, lane);
  enter_dependent_kernel();
  if (!p.take_group_rows(0)) return;
  const ActRows& act = p.act;
  const uint32_t n_blocks = p.n_units;

  float total = -0.0f;
  for (uint32_t base = 0; base < n_blocks; base += 32 * kMatvecBatch) {
#pragma unroll
    for (int j = 0; j < kMatvecBatch; ++j) {
      const uint32_t b = base + 32 * j + static_cast<uint32_t>(lane);
      if (b < n_blocks) {
        const uint8_t* blk = wrow + b * F::kBlockBytes;
        const int4 a_lo = act.qs16(0, 32 * b);
        const int4 a_hi = act.qs16(0, 32 * b + 16);
        const int a_lo_w[4] = {a_lo.x, a_lo.y, a_lo.z, a_lo.w};
        const int a_hi_w[4] = {a_hi.x, a_hi.y, a_hi.z, a_hi.w};
        int dot = kFloatMagicBits;
        float dw;
        if constexpr (F::kFormat == quant::QuantFormat::Q8_0) {
          const AlignedBlockQ8_0 block(blk);
#pragma unroll
          for (int k = 0; k < 4; ++k) {
            dot = __dp4a(static_cast<int>(block.qs_word(k)), a_lo_w[k], dot);
            dot = __dp4a(static_cast<int>(block.qs_word(4 + k)), a_hi_w[k], dot);
          }
          dw = half_bits_to_float(block.scale_bits());
        } else {
#pragma unroll
          for (int k = 0; k < 4; ++k) {
            uint32_t lo, hi;
            F::template word<GlobalMem>(blk, k, lo, hi);
            dot = __dp4a(static_cast<int>(lo), a_lo_w[k], dot);
            dot = __dp4a(static_cast<int>(hi), a_hi_w[k], dot);
          }
          dw = F::template scale<GlobalMem>(blk);
        }
        float u = block_scaled_dot(dot, dw, block_dot_offset(dw));
        if constexpr (F::kMin) {
          u = block_scaled_dot_min(u, exact_float_biased(kFloatMagicBits + act.sum(0, b)),
                                   F::template min_value<GlobalMem>(blk));
        }
        terms[warp][32 * j + lane] = make_float2(u, act.scale(0, b));
      }
    }
    __syncwarp();
    // The chain through the step's blocks in order (every lane runs it).
    const uint32_t n = min(32u * kMatvecBatch, n_blocks - base);
#pragma unroll 8
    for (uint32_t i = 0; i < n; ++i) {
      const float2 e = terms[warp][i];
      total = block_step(total, e.x, e.y);
    }
    __syncwarp();
  }
  if (lane == 0) matvec_store(p, o, total);
}

// U: a super-block format's work units, with
//   kUnits                       units per super-block (a power of two <= 32)
//   unit_sums(wrow, unit, act)   the unit's exact (isum, msum) with activation row 0
// and F its weight_formats.cuh description (d, dmin, kMin).
template <class U, class F>
__global__ void __launch_bounds__(kMatvecWarps * 32) matvec_superblock_kernel(const MatvecParams batch) {
  MatvecParams p = batch.batch_entry();
  constexpr int kUnits = static_cast<int>(U::kUnits);
  constexpr int kPerStep = 32 / kUnits;  // super-blocks per step
  const int lane = static_cast<int>(threadIdx.x & 31u);
  const uint32_t o = blockIdx.x * kMatvecWarps + (threadIdx.x >> 5);
  if (o >= p.n_out) return;
  const uint8_t* wrow = matvec_row_start(p, o, lane);
  enter_dependent_kernel();
  if (!p.take_group_rows(0)) return;
  const ActRows& act = p.act;
  const uint32_t n_sb = p.n_units / kUnits;
  const int g = lane / kUnits;

  float total = -0.0f;
  for (uint32_t base = 0; base < n_sb; base += kPerStep * kMatvecBatch) {
    // Each super-block's part (before the activation scale) and that scale,
    // in every lane of its group.
    float part[kMatvecBatch], da[kMatvecBatch];
#pragma unroll
    for (int j = 0; j < kMatvecBatch; ++j) {
      const uint32_t sb = base + kPerStep * j + static_cast<uint32_t>(g);
      int2 sums = make_int2(0, 0);
      float d = 0.0f, dmin = 0.0f;
      da[j] = 0.0f;
      if (sb < n_sb) {
        sums = U::unit_sums(wrow, sb * kUnits + static_cast<uint32_t>(lane % kUnits), act);
        const uint8_t* blk = wrow + sb * F::kBlockBytes;
        d = F::template d<GlobalMem>(blk);
        dmin = F::template dmin<GlobalMem>(blk);
        da[j] = act.scale(0, sb);
      }
#pragma unroll
      for (int off = kUnits / 2; off > 0; off >>= 1) {
        sums.x += __shfl_xor_sync(0xFFFFFFFFu, sums.x, off);
        sums.y += __shfl_xor_sync(0xFFFFFFFFu, sums.y, off);
      }
      part[j] = F::kMin ? superblock_part_min(sums.x, __int2float_rn(sums.y), d, dmin) : superblock_part(sums.x, d);
    }
    // The chain over the batch's super-blocks in order (every lane runs it).
#pragma unroll
    for (int j = 0; j < kMatvecBatch; ++j) {
#pragma unroll
      for (int k = 0; k < kPerStep; ++k) {
        const float x = __shfl_sync(0xFFFFFFFFu, part[j], k * kUnits);
        const float a = __shfl_sync(0xFFFFFFFFu, da[j], k * kUnits);
        if (base + kPerStep * j + k < n_sb) total = superblock_step(total, x, a);
      }
    }
  }
  if (lane == 0) matvec_store(p, o, total);
}

template <class F>
void launch_matvec_q32(const MatmulArgs& args, cudaStream_t stream) {
  const MatvecParams p = matvec_params(args, 32);
  launch_kernel(matvec_q32_kernel<F>, dim3((args.n_out + kMatvecWarps - 1) / kMatvecWarps, 1, args.n_batch),
                dim3(kMatvecWarps * 32),
                0, stream, p);
}

template <class U, class F>
void launch_matvec_superblock(const MatmulArgs& args, cudaStream_t stream) {
  const MatvecParams p = matvec_params(args, quant::kQK_K / U::kUnits);
  launch_kernel(matvec_superblock_kernel<U, F>, dim3((args.n_out + kMatvecWarps - 1) / kMatvecWarps, 1, args.n_batch),
                dim3(kMatvecWarps * 32), 0, stream, p);
}

}  // namespace lamina::cudaexec::detail
