// The shape of the float-weight matrix products (F32, F16, BF16 with f32
// activations) and the pieces every matvec shares (activation row access,
// launch parameters): one warp per output row, its lanes striding over the
// row's work units, each unit's weights decoded once and dotted with up to
// kRowTile activation rows. The 32 lane sums are then added in lane order.
// (The quantized formats follow weight_formats.cuh instead: matvec_quant.cuh
// and matmul_mma_kernel.cuh.)
//
// Batch invariance: a lane's units, the order it adds them in and the final
// sum do not depend on how many activation rows a launch handles, and every
// floating-point step is an explicit _rn intrinsic, so the compiler cannot
// contract differently in the 1-row and the tiled instantiation.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "activation_layout.h"
#include "block_decode.cuh"
#include "cuda_check.h"
#include "launch.cuh"
#include "matmul.h"

namespace lamina::cudaexec::detail {

inline constexpr int kMatvecWarps = 4;  // output rows per thread block
inline constexpr int kRowTile = 8;      // activation rows per weight pass

// Activation rows r0.. of one launch tile, in the layout of activation_layout.h.
struct ActRows {
  const uint8_t* base = nullptr;
  std::size_t stride = 0;
  uint32_t qs_offset = 0;
  uint32_t scale_offset = 0;
  uint32_t sum_offset = 0;

  __device__ const uint8_t* row(int r) const { return base + static_cast<std::size_t>(r) * stride; }
  // int8 values i .. i + 15 of row r (i a multiple of 16).
  __device__ int4 qs16(int r, uint32_t i) const { return load_act16(row(r) + qs_offset + i); }
  __device__ float scale(int r, uint32_t block) const {
    return reinterpret_cast<const float*>(row(r) + scale_offset)[block];
  }
  __device__ int sum(int r, uint32_t group) const {
    return reinterpret_cast<const int*>(row(r) + sum_offset)[group];
  }
  // f32 values i .. i + 3 of an F32 row (i a multiple of 4).
  __device__ float4 f32x4(int r, uint32_t i) const {
    return reinterpret_cast<const float4*>(row(r))[i / 4];
  }
  __device__ float f32(int r, uint32_t i) const { return reinterpret_cast<const float*>(row(r))[i]; }
};

struct MatvecParams {
  const uint8_t* w = nullptr;
  std::size_t w_row_bytes = 0;
  uint32_t n_out = 0;
  uint32_t n_units = 0;  // work units per weight row
  ActRows act;           // rows from 0
  uint32_t n_rows = 0;
  float* y = nullptr;
  std::size_t y_stride = 0;
  const float* bias = nullptr;
  const float* residual = nullptr;
  // Per blockIdx.z (MatmulArgs::n_batch, batch_rows).
  std::size_t w_batch_bytes = 0, act_batch_bytes = 0, y_batch_stride = 0, bias_batch_stride = 0;
  const uint32_t* batch_rows = nullptr;

  // The parameters of product blockIdx.z of a batched launch.
  __device__ MatvecParams batch_entry() const {
    MatvecParams p = *this;
    p.w += blockIdx.z * w_batch_bytes;
    p.act.base += blockIdx.z * act_batch_bytes;
    p.y += blockIdx.z * y_batch_stride;
    if (p.bias != nullptr) p.bias += blockIdx.z * bias_batch_stride;
    return p;
  }
  // A grouped product's rows (after wait_for_prior_kernels: an earlier
  // kernel wrote them); false when it has none from row r0 on.
  __device__ bool take_group_rows(uint32_t r0) {
    if (batch_rows == nullptr) return r0 < n_rows;
    const uint32_t first = batch_rows[blockIdx.z];
    n_rows = batch_rows[blockIdx.z + 1] - first;
    act.base += static_cast<std::size_t>(first) * act.stride;
    y += static_cast<std::size_t>(first) * y_stride;
    return r0 < n_rows;
  }
};

// K: a format's unit kernel, with
//   static void accumulate<R>(const uint8_t* wrow, uint32_t unit, const ActRows&, int nr, float (&acc)[R])
// adding the unit's contribution for activation rows 0 .. nr - 1 (nr <= R).
template <class K, int R>
__global__ void __launch_bounds__(kMatvecWarps * 32) matvec_kernel(const MatvecParams batch) {
  MatvecParams p = batch.batch_entry();
  const int lane = static_cast<int>(threadIdx.x & 31u);
  const uint32_t o = blockIdx.x * kMatvecWarps + (threadIdx.x >> 5);
  if (o >= p.n_out) return;
  const uint32_t r0 = blockIdx.y * R;
  const uint8_t* wrow = p.w + static_cast<std::size_t>(o) * p.w_row_bytes;
  // No kernel writes the weights: their fetch into L2 starts while the
  // previous kernel (the activations' producer) is still running.
  for (std::size_t at = static_cast<std::size_t>(lane) * 128; at < p.w_row_bytes; at += 32 * 128) {
    asm volatile("prefetch.global.L2 [%0];" ::"l"(wrow + at));
  }
  enter_dependent_kernel();
  if (!p.take_group_rows(r0)) return;
  const int nr = static_cast<int>(min(static_cast<uint32_t>(R), p.n_rows - r0));
  ActRows act = p.act;
  act.base += static_cast<std::size_t>(r0) * act.stride;

  float acc[R];
#pragma unroll
  for (int r = 0; r < R; ++r) acc[r] = 0.0f;
#pragma unroll 4
  for (uint32_t u = static_cast<uint32_t>(lane); u < p.n_units; u += 32) K::template accumulate<R>(wrow, u, act, nr, acc);

  // Lane l's sum of row r goes to lane_sums[warp][r][l]; lane r adds row r's
  // in lane order, starting from -0 (-0 + x is x for every x).
  __shared__ float lane_sums[kMatvecWarps][R][33];
  const int warp = static_cast<int>(threadIdx.x >> 5);
#pragma unroll
  for (int r = 0; r < R; ++r) lane_sums[warp][r][lane] = acc[r];
  __syncwarp();
  if (lane >= nr) return;
  float v = -0.0f;
#pragma unroll 8
  for (int l = 0; l < 32; ++l) v = __fadd_rn(v, lane_sums[warp][lane][l]);
  const std::size_t at = static_cast<std::size_t>(r0 + lane) * p.y_stride + o;
  if (p.bias != nullptr) v = __fadd_rn(v, p.bias[o]);
  if (p.residual != nullptr) v = __fadd_rn(v, p.residual[at]);
  p.y[at] = v;
}

// Parameters of a launch over args (n_units: work units per weight row).
MatvecParams matvec_params(const MatmulArgs& args, uint32_t elems_per_unit);

// Launches K over args: one warp per output row, the activation rows in
// tiles of kRowTile (a single row gets its own instantiation, the decode case).
template <class K>
void launch_matvec(const MatmulArgs& args, uint32_t elems_per_unit, cudaStream_t stream) {
  if (args.n_out == 0 || args.n_rows == 0) return;
  const MatvecParams p = matvec_params(args, elems_per_unit);
  const dim3 block(kMatvecWarps * 32);
  const uint32_t row_blocks = (args.n_out + kMatvecWarps - 1) / kMatvecWarps;
  if (args.n_rows == 1) {
    launch_kernel(matvec_kernel<K, 1>, dim3(row_blocks, 1, args.n_batch), block, 0, stream, p);
  } else {
    launch_kernel(matvec_kernel<K, kRowTile>, dim3(row_blocks, (args.n_rows + kRowTile - 1) / kRowTile, args.n_batch), block, 0,
                  stream, p);
  }
}

// Per family of formats (matmul_q32.cu and matmul_kquants.cu: one row only;
// matmul_float.cu: any rows); each returns false for a format it does not handle.
bool launch_matmul_q32(const MatmulArgs& args, cudaStream_t stream);
bool launch_matmul_kquants(const MatmulArgs& args, cudaStream_t stream);
bool launch_matmul_float(const MatmulArgs& args, cudaStream_t stream);

}  // namespace lamina::cudaexec::detail
