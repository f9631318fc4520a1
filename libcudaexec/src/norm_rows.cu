// RMSNorm / LayerNorm of rows, optionally quantizing the normed rows for the
// next matrix product in the same launch. One block per row, as many threads
// as the row needs at 4 (or 8) values each, so that a single row (the decode
// step) finishes quickly; each thread keeps its values (elements t, t + T,
// ... for T threads) in registers, so the row is read once. The block size
// depends only on the row length: a row's result never depends on the batch.
#include "activation_layout.h"
#include "cuda_check.h"
#include "launch.cuh"
#include "lamina/quant/blocks.h"
#include "matmul.h"
#include "ops.h"
#include "quantize_block.cuh"

namespace lamina::cudaexec::detail {
namespace {

constexpr int kLongRowThreads = 256;
constexpr int kMaxThreads = 1024;

// Sum over the block in a fixed order (warp butterflies, then the warps'
// sums in index order, a butterfly again), so every run gives the same bits.
__device__ double block_sum(double v, double* scratch) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int n_warps = static_cast<int>(blockDim.x / 32);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  double s = lane < n_warps ? scratch[lane] : 0.0;
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  __syncthreads();  // scratch is reused by the next sum
  return s;
}

enum class RowQuant { None, Q8_0, Q8_1, Q8_K };

struct NormParams {
  NormKind kind = NormKind::Rms;
  const float* x = nullptr;
  std::size_t x_stride = 0;
  const int32_t* rows = nullptr;
  const float* w = nullptr;
  const float* b = nullptr;
  float eps = 0.0f;
  uint32_t n = 0;
  float* out = nullptr;
  std::size_t out_stride = 0;
  bool accumulate = false;
  uint8_t* act = nullptr;  // quantized rows (Q != None), layout.stride apart
  ActivationLayout layout;
};

// kPer values per thread cover rows of up to kPer * n_threads values. For
// Q8_K the normed row is staged in shared memory (n floats), since a lane
// quantizes 8 consecutive values there.
template <int kPer, RowQuant Q>
__global__ void __launch_bounds__(kMaxThreads) norm_rows_kernel(const NormParams p) {
  extern __shared__ float staged[];
  __shared__ double scratch[32];
  const uint32_t n_threads = blockDim.x;
  const uint32_t n_warps = n_threads / 32;
  enter_dependent_kernel();
  const uint32_t r = blockIdx.x;
  const float* xr = p.x + static_cast<std::size_t>(p.rows ? p.rows[r] : static_cast<int32_t>(r)) * p.x_stride;
  float* yr = p.out + r * p.out_stride;
  // The norm weights are loaded with the row, before the sums need the row.
  float xv[kPer], wv[kPer];
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    const uint32_t i = threadIdx.x + k * n_threads;
    xv[k] = i < p.n ? xr[i] : 0.0f;
    wv[k] = i < p.n ? p.w[i] : 0.0f;
  }
  double mean = 0.0;
  if (p.kind == NormKind::Layer) {
    double s = 0.0;
#pragma unroll
    for (int k = 0; k < kPer; ++k)
      if (threadIdx.x + k * n_threads < p.n) s += xv[k];
    mean = block_sum(s, scratch) / p.n;
  }
  double sq = 0.0;
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    if (threadIdx.x + k * n_threads < p.n) {
      const double d = xv[k] - mean;
      sq += d * d;
    }
  }
  const double scale = 1.0 / sqrt(block_sum(sq, scratch) / p.n + static_cast<double>(p.eps));
  float yv[kPer];
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    const uint32_t i = threadIdx.x + k * n_threads;
    yv[k] = 0.0f;
    if (i >= p.n) continue;
    float y;
    if (p.kind == NormKind::Rms) {
      y = static_cast<float>(xv[k] * scale * wv[k]);
    } else {
      y = static_cast<float>((xv[k] - mean) * scale) * wv[k];
      if (p.b) y += p.b[i];
    }
    yr[i] = p.accumulate ? yr[i] + y : y;
    yv[k] = y;
  }
  if constexpr (Q != RowQuant::None) {
    // The quantized row, from the values just stored (the caller never
    // combines quantization with accumulate).
    uint8_t* act_row = p.act + r * p.layout.stride;
    const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
    if constexpr (Q == RowQuant::Q8_0 || Q == RowQuant::Q8_1) {
      // Thread (warp, lane) holds value `lane` of blocks k * n_warps + warp.
#pragma unroll
      for (int k = 0; k < kPer; ++k) {
        if (k * n_threads + static_cast<uint32_t>(warp) * 32 < p.n) {
          quantize_q8_32_block<Q == RowQuant::Q8_1>(yv[k], lane, act_row, p.layout,
                                                    k * n_warps + static_cast<uint32_t>(warp));
        }
      }
    } else if constexpr (Q == RowQuant::Q8_K) {
#pragma unroll
      for (int k = 0; k < kPer; ++k) {
        const uint32_t i = threadIdx.x + k * n_threads;
        if (i < p.n) staged[i] = yv[k];
      }
      __syncthreads();
      for (uint32_t blk = static_cast<uint32_t>(warp); blk < p.n / quant::kQK_K; blk += n_warps) {
        float v[kQ8KPerLane];
#pragma unroll
        for (int k = 0; k < kQ8KPerLane; ++k) v[k] = staged[blk * quant::kQK_K + kQ8KPerLane * lane + k];
        quantize_q8_k_block(v, lane, act_row, p.layout, blk);
      }
    }
  }
}

// Rows longer than the register-held ones: read from memory in every pass.
__global__ void norm_long_rows_kernel(const NormParams p) {
  __shared__ double scratch[32];
  const uint32_t n_threads = blockDim.x;
  enter_dependent_kernel();
  const uint32_t r = blockIdx.x;
  const float* xr = p.x + static_cast<std::size_t>(p.rows ? p.rows[r] : static_cast<int32_t>(r)) * p.x_stride;
  float* yr = p.out + r * p.out_stride;
  double mean = 0.0;
  if (p.kind == NormKind::Layer) {
    double s = 0.0;
    for (uint32_t i = threadIdx.x; i < p.n; i += n_threads) s += xr[i];
    mean = block_sum(s, scratch) / p.n;
  }
  double sq = 0.0;
  for (uint32_t i = threadIdx.x; i < p.n; i += n_threads) {
    const double d = xr[i] - mean;
    sq += d * d;
  }
  const double scale = 1.0 / sqrt(block_sum(sq, scratch) / p.n + static_cast<double>(p.eps));
  for (uint32_t i = threadIdx.x; i < p.n; i += n_threads) {
    float y;
    if (p.kind == NormKind::Rms) {
      y = static_cast<float>(xr[i] * scale * p.w[i]);
    } else {
      y = static_cast<float>((xr[i] - mean) * scale) * p.w[i];
      if (p.b) y += p.b[i];
    }
    yr[i] = p.accumulate ? yr[i] + y : y;
  }
}

constexpr uint32_t kMaxHeldRow = 8 * kMaxThreads;

// Threads for rows of n values at `per` values each: whole warps.
dim3 held_threads(uint32_t n, uint32_t per) { return dim3(((n + per - 1) / per + 31) / 32 * 32); }

template <RowQuant Q>
void launch_held(const NormParams& p, uint32_t n_rows, cudaStream_t stream) {
  const std::size_t smem = Q == RowQuant::Q8_K ? p.n * sizeof(float) : 0;
  if (p.n <= 4 * kMaxThreads) {
    launch_kernel(norm_rows_kernel<4, Q>, dim3(n_rows), held_threads(p.n, 4), smem, stream, p);
  } else {
    launch_kernel(norm_rows_kernel<8, Q>, dim3(n_rows), held_threads(p.n, 8), smem, stream, p);
  }
}

NormParams norm_params(NormKind kind, const float* x, std::size_t x_stride, const int32_t* rows, const float* w,
                       const float* b, float eps, uint32_t n, float* out, std::size_t out_stride, bool accumulate) {
  NormParams p;
  p.kind = kind;
  p.x = x;
  p.x_stride = x_stride;
  p.rows = rows;
  p.w = w;
  p.b = b;
  p.eps = eps;
  p.n = n;
  p.out = out;
  p.out_stride = out_stride;
  p.accumulate = accumulate;
  return p;
}

}  // namespace

void norm_rows(NormKind kind, const float* x, std::size_t x_stride, const int32_t* rows, const float* w,
               const float* b, float eps, uint32_t n, uint32_t n_rows, float* out, std::size_t out_stride,
               bool accumulate, cudaStream_t stream) {
  if (n_rows == 0) return;
  const NormParams p = norm_params(kind, x, x_stride, rows, w, b, eps, n, out, out_stride, accumulate);
  if (n <= kMaxHeldRow) {
    launch_held<RowQuant::None>(p, n_rows, stream);
  } else {
    launch_kernel(norm_long_rows_kernel, dim3(n_rows), dim3(kLongRowThreads), 0, stream, p);
  }
}

bool norm_rows_quantized(NormKind kind, const float* x, std::size_t x_stride, const int32_t* rows, const float* w,
                         const float* b, float eps, uint32_t n, uint32_t n_rows, float* out, std::size_t out_stride,
                         quant::QuantFormat act_format, void* act, cudaStream_t stream) {
  using quant::QuantFormat;
  if (n > kMaxHeldRow) return false;
  RowQuant q = RowQuant::None;
  uint32_t block = 0;
  switch (act_format) {
    case QuantFormat::Q8_0: q = RowQuant::Q8_0, block = quant::kQK; break;
    case QuantFormat::Q8_1: q = RowQuant::Q8_1, block = quant::kQK; break;
    case QuantFormat::Q8_K: q = RowQuant::Q8_K, block = quant::kQK_K; break;
    default: return false;
  }
  if (n % block != 0) return false;
  if (n_rows == 0) return true;
  NormParams p = norm_params(kind, x, x_stride, rows, w, b, eps, n, out, out_stride, false);
  p.act = static_cast<uint8_t*>(act);
  p.layout = activation_layout(act_format, n);
  switch (q) {
    case RowQuant::Q8_0: launch_held<RowQuant::Q8_0>(p, n_rows, stream); break;
    case RowQuant::Q8_1: launch_held<RowQuant::Q8_1>(p, n_rows, stream); break;
    default: launch_held<RowQuant::Q8_K>(p, n_rows, stream); break;
  }
  return true;
}

}  // namespace lamina::cudaexec::detail
