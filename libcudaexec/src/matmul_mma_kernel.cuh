// The tensor-core matrix product for many activation rows, bit-identical to
// the matvec kernel (matvec_kernel.cuh) for every output.
//
// Why it can be: the matvec gives lane l of a warp the work units l, l + 32,
// ... of an output row, each unit's integer dot is exact, each lane chains
// its units' f32 scalings in order, and the 32 lane sums are added in lane
// order. Here the int8 MMA (m16n8k16, exact int32 sums) yields the same
// integer dots for a 128-output x 64-row tile, and the f32 steps are replayed
// per (row, output): units in the lane order "slot" by slot, each slot's
// chain exactly as the lane does it, each finished slot added to the total.
//
// Every unit here is 32 values in two 16-value chunks (one MMA k-step each).
// A format F provides:
//   WMeta, AMeta                  per (output, unit) and (row, unit) values for the scaling
//   kChained                      chunk dots summed by the MMA (one int per unit) or kept apart
//   kDotInit                      the accumulator's start (see exact_float_biased)
//   decode(wrow, unit, c0, c1, m) the unit's 32 int8 weights (chunk 0, chunk 1) and its WMeta
//   act_chunk(unit, c)            index of chunk c's first value in an activation row
//   act_meta(act, r, unit)        the AMeta of row r
//   accumulate(acc, d0, d1, w, a) acc after the unit, with the matvec's operations
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "activation_layout.h"
#include "block_decode.cuh"
#include "cuda_check.h"
#include "matmul.h"
#include "matmul_mma.h"
#include "matvec_kernel.cuh"

namespace lamina::cudaexec::detail {

// A block: kMmaWarpsOut x kMmaWarpsRows warps, each 32 outputs (two m16
// tiles) x 8 * kMmaNt rows (n8 tiles).
inline constexpr int kMmaWarpsOut = 4;
inline constexpr int kMmaWarpsRows = 2;
inline constexpr int kMmaNt = 4;
inline constexpr int kMmaThreads = 32 * kMmaWarpsOut * kMmaWarpsRows;
inline constexpr int kMmaTileOut = 32 * kMmaWarpsOut;           // outputs per block
inline constexpr int kMmaTileRows = 8 * kMmaNt * kMmaWarpsRows;  // activation rows per block
inline constexpr int kMmaStageUnits = 4;                        // work units per shared-memory stage
// Bytes per tile row in shared memory: the stage's int8 values plus 16, so
// the 8 rows a fragment load touches fall in distinct banks.
inline constexpr int kMmaRowBytes = kMmaStageUnits * 32 + 16;

// int -> f32 without the conversion unit, exact for |x| < 2^22: the float
// whose bits are 0x4B400000 + x is 1.5 * 2^23 + x. Equal to __int2float_rn(x).
inline constexpr int kFloatMagicBits = 0x4B400000;
__device__ __forceinline__ float exact_float_biased(int biased) {
  return __fsub_rn(__int_as_float(biased), 12582912.0f);
}

__device__ __forceinline__ void mma_s8_m16n8k16(int (&d)[4], uint32_t a0, uint32_t a1, uint32_t b0) {
  asm("mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
      : "r"(a0), "r"(a1), "r"(b0));
}

// Which units the matvec lanes ("slots") take, in lane order: slot t is
// lane t, whose units are t, t + 32, ...
struct SlotWalk {
  uint32_t per_slot;  // units of every slot ...
  uint32_t extra;     // ... plus one for slots below this
  int t = 0;          // slot of the next unit
  uint32_t i = 0;     // its index within the slot

  __device__ SlotWalk(uint32_t n_units) : per_slot(n_units / 32), extra(n_units % 32) {}
  __device__ uint32_t count(int slot) const { return per_slot + (static_cast<uint32_t>(slot) < extra ? 1u : 0u); }
  __device__ uint32_t unit() const { return static_cast<uint32_t>(t) + 32 * i; }
  __device__ bool done() const { return t >= 32 || count(t) == 0; }
  // Moves past the current unit; true when that finished its slot.
  __device__ bool advance() {
    if (++i < count(t)) return false;
    ++t;
    i = 0;
    return true;
  }
};

struct MmaParams {
  const uint8_t* w = nullptr;
  std::size_t w_row_bytes = 0;
  uint32_t n_out = 0;
  uint32_t n_units = 0;
  ActRows act;
  uint32_t n_rows = 0;
  float* y = nullptr;
  std::size_t y_stride = 0;
  const float* bias = nullptr;
  const float* residual = nullptr;
};

template <int N>
__device__ __forceinline__ uint32_t pick(const uint32_t (&v)[N], int i) {
  uint32_t r = v[0];
#pragma unroll
  for (int k = 1; k < N; ++k) r = (i == k) ? v[k] : r;
  return r;
}

template <class F>
__global__ void __launch_bounds__(kMmaThreads, 2) matmul_mma_kernel(const MmaParams p) {
  constexpr int G = kMmaStageUnits;
  constexpr int S = kMmaRowBytes;
  using WMeta = typename F::WMeta;
  using AMeta = typename F::AMeta;
  __shared__ __align__(16) uint8_t s_w[kMmaTileOut * S];
  __shared__ __align__(16) uint8_t s_a[kMmaTileRows * S];
  __shared__ WMeta s_wm[G][kMmaTileOut];
  __shared__ AMeta s_am[G][kMmaTileRows];

  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid >> 5;
  const int gid = (tid & 31) >> 2;  // fragment row group
  const int tig = tid & 3;          // thread in group
  const uint32_t o0 = blockIdx.x * kMmaTileOut;
  const uint32_t r0 = blockIdx.y * kMmaTileRows;
  const int wo = (warp % kMmaWarpsOut) * 32;
  const int wr = (warp / kMmaWarpsOut) * 8 * kMmaNt;

  // Pair (mt, nt, i) of this thread: output wo + 16 mt + gid + 8 (i / 2),
  // row wr + 8 nt + 2 tig + i % 2 (the m16n8 accumulator layout). acc is
  // the current slot's chain, total the sum of the finished slots; -0 + x
  // is x for every x, so total starts as the matvec's sum does.
  constexpr int P = 2 * kMmaNt * 4;
  float acc[P], total[P];
#pragma unroll
  for (int q = 0; q < P; ++q) {
    acc[q] = 0.0f;
    total[q] = -0.0f;
  }
  SlotWalk walk(p.n_units);
  ActRows act = p.act;
  act.base += static_cast<std::size_t>(r0) * act.stride;

  while (!walk.done()) {
    // The next G units of the walk (fewer at the end).
    uint32_t units[G];
    int n = 0;
    {
      SlotWalk ahead = walk;
#pragma unroll
      for (int g = 0; g < G; ++g) {
        units[g] = 0;
        if (!ahead.done()) {
          units[g] = ahead.unit();
          ++n;
          ahead.advance();
        }
      }
    }

    // Stage: weights decoded to int8, activations copied, the scaling values.
#pragma unroll
    for (int k = 0; k < kMmaTileOut * G / kMmaThreads; ++k) {
      const int item = tid + k * kMmaThreads;
      const int ol = item % kMmaTileOut;
      const int g = item / kMmaTileOut;
      uint4 c0 = make_uint4(0, 0, 0, 0), c1 = c0;
      WMeta wm{};
      if (g < n && o0 + ol < p.n_out) {
        F::decode(p.w + static_cast<std::size_t>(o0 + ol) * p.w_row_bytes, pick(units, g), c0, c1, wm);
      }
      *reinterpret_cast<uint4*>(s_w + ol * S + g * 32) = c0;
      *reinterpret_cast<uint4*>(s_w + ol * S + g * 32 + 16) = c1;
      s_wm[g][ol] = wm;
    }
#pragma unroll
    for (int k = 0; k < kMmaTileRows * G / kMmaThreads; ++k) {
      const int item = tid + k * kMmaThreads;
      const int rl = item % kMmaTileRows;
      const int g = item / kMmaTileRows;
      int4 c0 = make_int4(0, 0, 0, 0), c1 = c0;
      AMeta am{};
      if (g < n && r0 + rl < p.n_rows) {
        const uint32_t unit = pick(units, g);
        c0 = act.qs16(rl, F::act_chunk(unit, 0));
        c1 = act.qs16(rl, F::act_chunk(unit, 1));
        am = F::act_meta(act, rl, unit);
      }
      *reinterpret_cast<int4*>(s_a + rl * S + g * 32) = c0;
      *reinterpret_cast<int4*>(s_a + rl * S + g * 32 + 16) = c1;
      s_am[g][rl] = am;
    }
    __syncthreads();

#pragma unroll
    for (int g = 0; g < G; ++g) {
      if (g < n) {
        // Fragments of both chunks: A (weights) per m16 tile, B (rows) per n8 tile.
        uint32_t a[2][2][2], b[2][kMmaNt];
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          const int col = g * 32 + c * 16 + tig * 4;
#pragma unroll
          for (int mt = 0; mt < 2; ++mt) {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              a[c][mt][h] = *reinterpret_cast<const uint32_t*>(s_w + (wo + 16 * mt + gid + 8 * h) * S + col);
            }
          }
#pragma unroll
          for (int nt = 0; nt < kMmaNt; ++nt) {
            b[c][nt] = *reinterpret_cast<const uint32_t*>(s_a + (wr + 8 * nt + gid) * S + col);
          }
        }
        WMeta wm[2][2];
#pragma unroll
        for (int mt = 0; mt < 2; ++mt) {
#pragma unroll
          for (int h = 0; h < 2; ++h) wm[mt][h] = s_wm[g][wo + 16 * mt + gid + 8 * h];
        }
#pragma unroll
        for (int nt = 0; nt < kMmaNt; ++nt) {
          AMeta am[2];
#pragma unroll
          for (int e = 0; e < 2; ++e) am[e] = s_am[g][wr + 8 * nt + 2 * tig + e];
#pragma unroll
          for (int mt = 0; mt < 2; ++mt) {
            int d0[4], d1[4];
#pragma unroll
            for (int i = 0; i < 4; ++i) d0[i] = d1[i] = F::kDotInit;
            mma_s8_m16n8k16(d0, a[0][mt][0], a[0][mt][1], b[0][nt]);
            if constexpr (F::kChained) {
              mma_s8_m16n8k16(d0, a[1][mt][0], a[1][mt][1], b[1][nt]);
            } else {
              mma_s8_m16n8k16(d1, a[1][mt][0], a[1][mt][1], b[1][nt]);
            }
#pragma unroll
            for (int i = 0; i < 4; ++i) {
              float& s = acc[(mt * kMmaNt + nt) * 4 + i];
              s = F::accumulate(s, d0[i], d1[i], wm[mt][i >> 1], am[i & 1]);
            }
          }
        }
        if (walk.advance()) {
#pragma unroll
          for (int q = 0; q < P; ++q) {
            total[q] = __fadd_rn(total[q], acc[q]);
            acc[q] = 0.0f;
          }
        }
      }
    }
    __syncthreads();
  }
  // Lanes past the last unit add their +0 in the matvec (it turns a -0 total into +0).
  for (int t = walk.t; t < 32; ++t) {
#pragma unroll
    for (int q = 0; q < P; ++q) total[q] = __fadd_rn(total[q], 0.0f);
  }

#pragma unroll
  for (int mt = 0; mt < 2; ++mt) {
#pragma unroll
    for (int nt = 0; nt < kMmaNt; ++nt) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const uint32_t o = o0 + wo + 16 * mt + gid + 8 * (i >> 1);
        const uint32_t r = r0 + wr + 8 * nt + 2 * tig + (i & 1);
        if (o < p.n_out && r < p.n_rows) {
          const std::size_t at = static_cast<std::size_t>(r) * p.y_stride + o;
          float v = total[(mt * kMmaNt + nt) * 4 + i];
          if (p.bias != nullptr) v = __fadd_rn(v, p.bias[o]);
          if (p.residual != nullptr) v = __fadd_rn(v, p.residual[at]);
          p.y[at] = v;
        }
      }
    }
  }
}

template <class F>
void launch_matmul_mma(const MatmulArgs& args, cudaStream_t stream) {
  if (args.n_out == 0 || args.n_rows == 0) return;
  const ActivationLayout layout = activation_layout(activation_format(args.format), args.n_in);
  MmaParams p;
  p.w = static_cast<const uint8_t*>(args.w);
  p.w_row_bytes = quant::row_bytes(args.format, args.n_in);
  p.n_out = args.n_out;
  p.n_units = args.n_in / 32;
  p.act.base = static_cast<const uint8_t*>(args.act);
  p.act.stride = layout.stride;
  p.act.qs_offset = static_cast<uint32_t>(layout.qs_offset);
  p.act.scale_offset = static_cast<uint32_t>(layout.scale_offset);
  p.act.sum_offset = static_cast<uint32_t>(layout.sum_offset);
  p.n_rows = args.n_rows;
  p.y = args.y;
  p.y_stride = args.y_stride;
  p.bias = args.bias;
  p.residual = args.residual;
  const dim3 grid((args.n_out + kMmaTileOut - 1) / kMmaTileOut, (args.n_rows + kMmaTileRows - 1) / kMmaTileRows);
  matmul_mma_kernel<F><<<grid, kMmaThreads, 0, stream>>>(p);
  LAMINA_CUDA_CHECK_LAUNCH();
}

// Per family of formats (matmul_mma_q32.cu, matmul_mma_kquants.cu); each
// returns false for a format it does not handle.
bool launch_matmul_mma_q32(const MatmulArgs& args, cudaStream_t stream);
bool launch_matmul_mma_kquants(const MatmulArgs& args, cudaStream_t stream);

}  // namespace lamina::cudaexec::detail
