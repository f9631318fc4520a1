#include "ops.h"

#include <algorithm>
#include <cfloat>

#include "cuda_check.h"
#include "launch.cuh"

namespace lamina::cudaexec::detail {
namespace {

constexpr int kThreads = 256;

// One warp per head of a row: Q heads, then K heads (normed, rotated,
// stored), then V heads (stored).
__global__ void prepare_qkv_kernel(QkvShape s, float* q, float* k, const float* v, std::size_t stride,
                                   const float* q_norm, const float* k_norm, const double* inv_freq,
                                   const uint32_t* pos, const uint32_t* seq, KvView kv, uint32_t layer) {
  enter_dependent_kernel();
  const uint32_t r = blockIdx.x;
  const uint32_t lane = threadIdx.x % 32;
  const uint32_t n_items = s.n_head + 2 * s.n_head_kv;
  for (uint32_t item = threadIdx.x / 32; item < n_items; item += blockDim.x / 32) {
    if (item >= s.n_head + s.n_head_kv) {
      const uint32_t hv = item - s.n_head - s.n_head_kv;
      const float* src = v + r * stride + std::size_t{hv} * s.head_dim_v;
      __half* dst = kv.v + kv.v_offset(seq[r], layer, pos[r]) + std::size_t{hv} * s.head_dim_v;
      for (uint32_t d = lane; d < s.head_dim_v; d += 32) dst[d] = __float2half_rn(src[d]);
      continue;
    }
    const bool is_q = item < s.n_head;
    const uint32_t head = is_q ? item : item - s.n_head;
    float* h = (is_q ? q : k) + r * stride + std::size_t{head} * s.head_dim_k;
    const float* norm_w = is_q ? q_norm : k_norm;
    if (norm_w) {
      double sq = 0.0;
      for (uint32_t d = lane; d < s.head_dim_k; d += 32) sq += static_cast<double>(h[d]) * h[d];
      for (int o = 16; o > 0; o >>= 1) sq += __shfl_xor_sync(0xffffffffu, sq, o);
      const double scale = 1.0 / sqrt(sq / s.head_dim_k + static_cast<double>(s.eps));
      for (uint32_t d = lane; d < s.head_dim_k; d += 32) h[d] = static_cast<float>(h[d] * scale * norm_w[d]);
      __syncwarp();
    }
    if (s.rope != RopeKind::None) {
      const uint32_t half = s.rope_dims / 2;
      for (uint32_t i = lane; i < half; i += 32) {
        const uint32_t a = s.rope == RopeKind::Norm ? 2 * i : i;
        const uint32_t b = s.rope == RopeKind::Norm ? 2 * i + 1 : i + half;
        double sn, cs;
        sincos(static_cast<double>(pos[r]) * inv_freq[i], &sn, &cs);
        const double x0 = h[a], x1 = h[b];
        h[a] = static_cast<float>(x0 * cs - x1 * sn);
        h[b] = static_cast<float>(x0 * sn + x1 * cs);
      }
      __syncwarp();
    }
    if (!is_q) {
      __half* dst = kv.k + kv.k_offset(seq[r], layer, pos[r]) + std::size_t{head} * s.head_dim_k;
      for (uint32_t d = lane; d < s.head_dim_k; d += 32) dst[d] = __float2half_rn(h[d]);
    }
  }
}

// SiLU and tanh-GELU in double, rounded once (as the CPU path).
__device__ float silu(float x) {
  const double v = x;
  return static_cast<float>(v / (1.0 + exp(-v)));
}

__device__ float gelu(float x, const uint16_t* table) {
  if (table) {
    if (x <= -10.0f) return 0.0f;
    if (x >= 10.0f) return x;
    return __half2float(__ushort_as_half(table[__half_as_ushort(__float2half_rn(x))]));
  }
  const double v = x;
  return static_cast<float>(0.5 * v * (1.0 + tanh(0.79788456080286535588 * v * (1.0 + 0.044715 * v * v))));
}

__global__ void gated_activation_kernel(FfnKind kind, const float* gate, const float* up, std::size_t in_stride,
                                        uint32_t n, const uint16_t* table, float* out, std::size_t out_stride) {
  enter_dependent_kernel();
  const uint32_t r = blockIdx.y;
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float g = gate[r * in_stride + i];
  const float a = kind == FfnKind::GatedSilu ? silu(g) : gelu(g, table);
  out[r * out_stride + i] = up ? a * up[r * in_stride + i] : a;
}

__global__ void add_rows_kernel(float* x, std::size_t x_stride, const float* y, std::size_t y_stride, uint32_t n) {
  enter_dependent_kernel();
  const uint32_t r = blockIdx.y;
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[r * x_stride + i] += y[r * y_stride + i];
}

__global__ void copy_rows_kernel(const float* src, std::size_t src_stride, const int32_t* rows, uint32_t n,
                                 float* dst, std::size_t dst_stride) {
  enter_dependent_kernel();
  const uint32_t r = blockIdx.y;
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) dst[r * dst_stride + i] = src[static_cast<std::size_t>(rows[r]) * src_stride + i];
}

__global__ void scatter_scaled_rows_kernel(const float* src, std::size_t src_stride, const int32_t* slots,
                                           const float* weights, uint32_t n, float* dst, std::size_t dst_stride) {
  enter_dependent_kernel();
  const uint32_t r = blockIdx.y;
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) dst[static_cast<std::size_t>(slots[r]) * dst_stride + i] = src[r * src_stride + i] * weights[r];
}

__global__ void sum_row_groups_kernel(const float* in, uint32_t group, uint32_t n, float* out,
                                      std::size_t out_stride) {
  enter_dependent_kernel();
  const uint32_t r = blockIdx.y;
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float* g = in + std::size_t{r} * group * n + i;
  float s = g[0];
  for (uint32_t k = 1; k < group; ++k) s += g[std::size_t{k} * n];
  out[r * out_stride + i] = s;
}

__global__ void softcap_kernel(float* x, std::size_t n, float cap) {
  enter_dependent_kernel();
  const std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x;
  if (i < n) x[i] = static_cast<float>(cap * tanh(static_cast<double>(x[i]) / cap));
}

__global__ void argmax_kernel(const float* x, uint32_t n, int32_t* ids) {
  enter_dependent_kernel();
  __shared__ float best_v[kThreads];
  __shared__ int32_t best_i[kThreads];
  const float* row = x + std::size_t{blockIdx.x} * n;
  float bv = -FLT_MAX;
  int32_t bi = -1;
  for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) {
    const float v = row[i];
    if (bi < 0 || v > bv) {
      bv = v;
      bi = static_cast<int32_t>(i);
    }
  }
  best_v[threadIdx.x] = bv;
  best_i[threadIdx.x] = bi;
  __syncthreads();
  for (uint32_t s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) {
      const float ov = best_v[threadIdx.x + s];
      const int32_t oi = best_i[threadIdx.x + s];
      const int32_t mi = best_i[threadIdx.x];
      if (oi >= 0 && (mi < 0 || ov > best_v[threadIdx.x] || (ov == best_v[threadIdx.x] && oi < mi))) {
        best_v[threadIdx.x] = ov;
        best_i[threadIdx.x] = oi;
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) ids[blockIdx.x] = best_i[0];
}

dim3 row_grid(uint32_t n, uint32_t n_rows) { return dim3((n + kThreads - 1) / kThreads, n_rows); }

}  // namespace

void prepare_qkv(const QkvShape& shape, float* q, float* k, const float* v, std::size_t stride, uint32_t n_rows,
                 const float* q_norm, const float* k_norm, const double* inv_freq, const uint32_t* pos,
                 const uint32_t* seq, const KvView& kv, uint32_t layer, cudaStream_t stream) {
  if (n_rows == 0) return;
  const uint32_t items = shape.n_head + 2 * shape.n_head_kv;
  const uint32_t threads = std::min<uint32_t>(kThreads, 32 * items);
  launch_kernel(prepare_qkv_kernel, dim3(n_rows), dim3(threads), 0, stream, shape, q, k, v, stride, q_norm, k_norm,
                inv_freq, pos, seq, kv, layer);
}

void gated_activation(FfnKind kind, const float* gate, const float* up, std::size_t in_stride, uint32_t n,
                      uint32_t n_rows, const uint16_t* gelu_table, float* out, std::size_t out_stride,
                      cudaStream_t stream) {
  if (n_rows == 0) return;
  launch_kernel(gated_activation_kernel, row_grid(n, n_rows), dim3(kThreads), 0, stream, kind, gate, up, in_stride, n,
                gelu_table, out, out_stride);
}

void add_rows(float* x, std::size_t x_stride, const float* y, std::size_t y_stride, uint32_t n, uint32_t n_rows,
              cudaStream_t stream) {
  if (n_rows == 0) return;
  launch_kernel(add_rows_kernel, row_grid(n, n_rows), dim3(kThreads), 0, stream, x, x_stride, y, y_stride, n);
}

void copy_rows(const float* src, std::size_t src_stride, const int32_t* rows, uint32_t n, uint32_t n_rows, float* dst,
               std::size_t dst_stride, cudaStream_t stream) {
  if (n_rows == 0) return;
  launch_kernel(copy_rows_kernel, row_grid(n, n_rows), dim3(kThreads), 0, stream, src, src_stride, rows, n, dst,
                dst_stride);
}

void scatter_scaled_rows(const float* src, std::size_t src_stride, const int32_t* slots, const float* weights,
                         uint32_t n, uint32_t n_rows, float* dst, std::size_t dst_stride, cudaStream_t stream) {
  if (n_rows == 0) return;
  launch_kernel(scatter_scaled_rows_kernel, row_grid(n, n_rows), dim3(kThreads), 0, stream, src, src_stride, slots,
                weights, n, dst, dst_stride);
}

void sum_row_groups(const float* in, uint32_t group, uint32_t n, uint32_t n_rows, float* out, std::size_t out_stride,
                    cudaStream_t stream) {
  if (n_rows == 0) return;
  launch_kernel(sum_row_groups_kernel, row_grid(n, n_rows), dim3(kThreads), 0, stream, in, group, n, out, out_stride);
}

void softcap(float* x, std::size_t n, float cap, cudaStream_t stream) {
  if (n == 0) return;
  launch_kernel(softcap_kernel, dim3(static_cast<unsigned>((n + kThreads - 1) / kThreads)), dim3(kThreads), 0, stream,
                x, n, cap);
}

void argmax_rows(const float* x, uint32_t n, uint32_t n_rows, int32_t* ids, cudaStream_t stream) {
  if (n_rows == 0) return;
  launch_kernel(argmax_kernel, dim3(n_rows), dim3(kThreads), 0, stream, x, n, ids);
}

}  // namespace lamina::cudaexec::detail
