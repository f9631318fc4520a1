#include "ops.h"

#include <algorithm>
#include <cfloat>

#include "activation_layout.h"
#include "cuda_check.h"
#include "launch.cuh"
#include "quantize_block.cuh"

namespace lamina::cudaexec::detail {
namespace {

constexpr int kThreads = 256;

// The rotation of each (row, pair): cos and sin of pos[r] * inv_freq[i], in
// double, computed once per step for all layers and heads.
__global__ void rope_table_kernel(const double* inv_freq, const uint32_t* pos, uint32_t half, double magnitude,
                                  double2* table) {
  enter_dependent_kernel();
  const uint32_t r = blockIdx.y;
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= half) return;
  double sn, cs;
  sincos(static_cast<double>(pos[r]) * inv_freq[i], &sn, &cs);
  table[std::size_t{r} * half + i] = make_double2(magnitude * cs, magnitude * sn);
}

constexpr uint32_t kQkvWarps = 4;  // heads per block of prepare_qkv

// One warp per head of a row (blockIdx.x: the row): Q heads, then K heads
// (normed, rotated, stored), then V heads (stored).
__global__ void prepare_qkv_kernel(QkvShape s, float* q, float* k, const float* v, std::size_t stride,
                                   const float* q_norm, const float* k_norm, const double2* rope,
                                   const uint32_t* pos, const uint32_t* seq, KvView kv, uint32_t layer) {
  enter_dependent_kernel();
  const uint32_t r = blockIdx.x;
  const uint32_t lane = threadIdx.x % 32;
  const uint32_t item = blockIdx.y * kQkvWarps + threadIdx.x / 32;
  if (item >= s.n_head + 2 * s.n_head_kv) return;
  if (item >= s.n_head + s.n_head_kv) {
    const uint32_t hv = item - s.n_head - s.n_head_kv;
    const float* src = v + r * stride + std::size_t{hv} * s.head_dim_v;
    __half* dst = kv.v + kv.v_offset(seq[r], layer, pos[r]) + std::size_t{hv} * s.head_dim_v;
    for (uint32_t d = lane; d < s.head_dim_v; d += 32) dst[d] = __float2half_rn(src[d]);
    return;
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
    const double2* cs = rope + std::size_t{r} * half;
    for (uint32_t i = lane; i < half; i += 32) {
      const uint32_t a = s.rope == RopeKind::Norm ? 2 * i : i;
      const uint32_t b = s.rope == RopeKind::Norm ? 2 * i + 1 : i + half;
      const double2 c = cs[i];
      const double x0 = h[a], x1 = h[b];
      h[a] = static_cast<float>(x0 * c.x - x1 * c.y);
      h[b] = static_cast<float>(x0 * c.y + x1 * c.x);
    }
    __syncwarp();
  }
  if (!is_q) {
    __half* dst = kv.k + kv.k_offset(seq[r], layer, pos[r]) + std::size_t{head} * s.head_dim_k;
    for (uint32_t d = lane; d < s.head_dim_k; d += 32) dst[d] = __float2half_rn(h[d]);
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

// gpt-oss's clamped SwiGLU in double, rounded once (as the CPU path).
__device__ float swiglu_oai(float gate, float up) {
  const double g = fmin(static_cast<double>(gate), 7.0);
  const double u = fmin(fmax(static_cast<double>(up), -7.0), 7.0);
  return static_cast<float>(g / (1.0 + exp(-1.702 * g)) * (u + 1.0));
}

__global__ void gated_activation_kernel(Activation kind, const float* gate, const float* up, std::size_t in_stride,
                                        uint32_t n, const uint16_t* table, float* out, std::size_t out_stride) {
  enter_dependent_kernel();
  const uint32_t r = blockIdx.y;
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float g = gate[r * in_stride + i];
  if (kind == Activation::SwigluOai) {
    out[r * out_stride + i] = swiglu_oai(g, up[r * in_stride + i]);
    return;
  }
  const float a = kind == Activation::Silu ? silu(g) : gelu(g, table);
  out[r * out_stride + i] = up ? a * up[r * in_stride + i] : a;
}

// gated_activation_kernel for rows of whole 256-value groups, each block's
// 256 outputs also quantized: as 8 Q8_0/Q8_1 blocks (a warp each) or as one
// Q8_K block (by warp 0, from the outputs staged in shared memory).
template <bool kSuper, bool kWithSum>
__global__ void __launch_bounds__(kThreads) gated_activation_quantized_kernel(
    Activation kind, const float* gate, const float* up, std::size_t in_stride, const uint16_t* table, float* out,
    std::size_t out_stride, uint8_t* act, ActivationLayout layout) {
  enter_dependent_kernel();
  __shared__ float staged[kThreads];
  const uint32_t r = blockIdx.y;
  const uint32_t i = blockIdx.x * kThreads + threadIdx.x;
  const float g = gate[r * in_stride + i];
  const float a = kind == Activation::Silu ? silu(g) : gelu(g, table);
  const float y = up ? a * up[r * in_stride + i] : a;
  if (out != nullptr) out[r * out_stride + i] = y;
  uint8_t* act_row = act + r * layout.stride;
  const int lane = static_cast<int>(threadIdx.x % 32);
  if constexpr (!kSuper) {
    quantize_q8_32_block<kWithSum>(y, lane, act_row, layout, i / quant::kQK);
  } else {
    staged[threadIdx.x] = y;
    __syncthreads();
    if (threadIdx.x < 32) {
      float v[kQ8KPerLane];
#pragma unroll
      for (int k = 0; k < kQ8KPerLane; ++k) v[k] = staged[kQ8KPerLane * lane + k];
      quantize_q8_k_block(v, lane, act_row, layout, blockIdx.x);
    }
  }
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
  if (i < n) dst[r * dst_stride + i] = src[static_cast<std::size_t>(rows ? rows[r] : r) * src_stride + i];
}

__global__ void scatter_scaled_rows_kernel(const float* src, std::size_t src_stride, const int32_t* slots,
                                           const float* weights, uint32_t n, float* dst, std::size_t dst_stride) {
  enter_dependent_kernel();
  const uint32_t r = blockIdx.y;
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) dst[static_cast<std::size_t>(slots[r]) * dst_stride + i] = src[r * src_stride + i] * weights[r];
}

__global__ void sum_terms_kernel(const float* in, uint32_t n_terms, std::size_t row_stride, std::size_t term_stride,
                                 uint32_t n, const float* bias, const float* residual, float* out,
                                 std::size_t out_stride) {
  enter_dependent_kernel();
  const uint32_t r = blockIdx.y;
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float* t = in + r * row_stride + i;
  float s = bias ? bias[i] + t[0] : t[0];
  for (uint32_t k = 1; k < n_terms; ++k) s += t[k * term_stride];
  const std::size_t at = r * out_stride + i;
  out[at] = residual ? residual[at] + s : s;
}

__global__ void softcap_kernel(float* x, std::size_t n, float cap) {
  enter_dependent_kernel();
  const std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x;
  if (i < n) x[i] = static_cast<float>(cap * tanh(static_cast<double>(x[i]) / cap));
}

// (v, i) beats (bv, bi): larger, or equal with the lower index; i < 0 is none.
__device__ __forceinline__ bool beats(float v, int32_t i, float bv, int32_t bi) {
  return i >= 0 && (bi < 0 || v > bv || (v == bv && i < bi));
}

// The best (value, index) of the block's threads, in thread 0 (any order of
// comparisons gives the same winner: beats() is a strict total order).
__device__ ArgmaxCandidate block_best(float bv, int32_t bi) {
  __shared__ ArgmaxCandidate warp_best[32];
  for (int o = 16; o > 0; o >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
    const int32_t oi = __shfl_xor_sync(0xffffffffu, bi, o);
    if (beats(ov, oi, bv, bi)) bv = ov, bi = oi;
  }
  const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) warp_best[warp] = {bv, bi};
  __syncthreads();
  ArgmaxCandidate best = warp_best[0];
  if (threadIdx.x == 0)
    for (uint32_t w = 1; w < blockDim.x / 32; ++w)
      if (beats(warp_best[w].v, warp_best[w].i, best.v, best.i)) best = warp_best[w];
  return best;
}

// First pass: block (p, r) finds the best of part p of row r.
__global__ void argmax_parts_kernel(const float* x, uint32_t n, ArgmaxCandidate* parts) {
  enter_dependent_kernel();
  const float* row = x + std::size_t{blockIdx.y} * n;
  const uint32_t chunk = (n + kArgmaxParts - 1) / kArgmaxParts;
  const uint32_t begin = blockIdx.x * chunk, end = min(n, begin + chunk);
  float bv = -FLT_MAX;
  int32_t bi = -1;
  for (uint32_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const float v = row[i];
    if (beats(v, static_cast<int32_t>(i), bv, bi)) bv = v, bi = static_cast<int32_t>(i);
  }
  const ArgmaxCandidate best = block_best(bv, bi);
  if (threadIdx.x == 0) parts[std::size_t{blockIdx.y} * kArgmaxParts + blockIdx.x] = best;
}

// Second pass: one block of kArgmaxParts threads per row.
__global__ void argmax_finish_kernel(const ArgmaxCandidate* parts, int32_t* ids) {
  enter_dependent_kernel();
  const ArgmaxCandidate c = parts[std::size_t{blockIdx.x} * kArgmaxParts + threadIdx.x];
  const ArgmaxCandidate best = block_best(c.v, c.i);
  if (threadIdx.x == 0) ids[blockIdx.x] = best.i;
}

dim3 row_grid(uint32_t n, uint32_t n_rows) { return dim3((n + kThreads - 1) / kThreads, n_rows); }

}  // namespace

void prepare_qkv(const QkvShape& shape, float* q, float* k, const float* v, std::size_t stride, uint32_t n_rows,
                 const float* q_norm, const float* k_norm, const double2* rope, const uint32_t* pos,
                 const uint32_t* seq, const KvView& kv, uint32_t layer, cudaStream_t stream) {
  if (n_rows == 0) return;
  const uint32_t items = shape.n_head + 2 * shape.n_head_kv;
  launch_kernel(prepare_qkv_kernel, dim3(n_rows, (items + kQkvWarps - 1) / kQkvWarps), dim3(32 * kQkvWarps), 0,
                stream, shape, q, k, v, stride, q_norm, k_norm, rope, pos, seq, kv, layer);
}

void rope_table(const double* inv_freq, const uint32_t* pos, uint32_t n_rows, uint32_t half, double magnitude,
                double2* table, cudaStream_t stream) {
  if (n_rows == 0 || half == 0) return;
  launch_kernel(rope_table_kernel, dim3((half + 63) / 64, n_rows), dim3(64), 0, stream, inv_freq, pos, half, magnitude,
                table);
}

void gated_activation(Activation kind, const float* gate, const float* up, std::size_t in_stride, uint32_t n,
                      uint32_t n_rows, const uint16_t* gelu_table, float* out, std::size_t out_stride,
                      cudaStream_t stream) {
  if (n_rows == 0) return;
  launch_kernel(gated_activation_kernel, row_grid(n, n_rows), dim3(kThreads), 0, stream, kind, gate, up, in_stride, n,
                gelu_table, out, out_stride);
}

bool gated_activation_quantized(Activation kind, const float* gate, const float* up, std::size_t in_stride, uint32_t n,
                                uint32_t n_rows, const uint16_t* gelu_table, float* out, std::size_t out_stride,
                                quant::QuantFormat act_format, void* act, cudaStream_t stream) {
  using quant::QuantFormat;
  static_assert(kThreads == quant::kQK_K);
  if (kind == Activation::SwigluOai) return false;
  if (n % kThreads != 0) return false;
  if (act_format != QuantFormat::Q8_0 && act_format != QuantFormat::Q8_1 && act_format != QuantFormat::Q8_K) {
    return false;
  }
  if (n_rows == 0) return true;
  const ActivationLayout layout = activation_layout(act_format, n);
  auto* rows = static_cast<uint8_t*>(act);
  const dim3 grid(n / kThreads, n_rows);
  switch (act_format) {
    case QuantFormat::Q8_0:
      launch_kernel(gated_activation_quantized_kernel<false, false>, grid, dim3(kThreads), 0, stream, kind, gate, up,
                    in_stride, gelu_table, out, out_stride, rows, layout);
      break;
    case QuantFormat::Q8_1:
      launch_kernel(gated_activation_quantized_kernel<false, true>, grid, dim3(kThreads), 0, stream, kind, gate, up,
                    in_stride, gelu_table, out, out_stride, rows, layout);
      break;
    default:
      launch_kernel(gated_activation_quantized_kernel<true, false>, grid, dim3(kThreads), 0, stream, kind, gate, up,
                    in_stride, gelu_table, out, out_stride, rows, layout);
      break;
  }
  return true;
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

void sum_terms(const float* in, uint32_t n_terms, std::size_t row_stride, std::size_t term_stride, uint32_t n,
               uint32_t n_rows, const float* bias, const float* residual, float* out, std::size_t out_stride,
               cudaStream_t stream) {
  if (n_rows == 0) return;
  launch_kernel(sum_terms_kernel, row_grid(n, n_rows), dim3(kThreads), 0, stream, in, n_terms, row_stride,
                term_stride, n, bias, residual, out, out_stride);
}

void softcap(float* x, std::size_t n, float cap, cudaStream_t stream) {
  if (n == 0) return;
  launch_kernel(softcap_kernel, dim3(static_cast<unsigned>((n + kThreads - 1) / kThreads)), dim3(kThreads), 0, stream,
                x, n, cap);
}

void argmax_rows(const float* x, uint32_t n, uint32_t n_rows, ArgmaxCandidate* parts, int32_t* ids,
                 cudaStream_t stream) {
  if (n_rows == 0) return;
  launch_kernel(argmax_parts_kernel, dim3(kArgmaxParts, n_rows), dim3(kThreads), 0, stream, x, n, parts);
  launch_kernel(argmax_finish_kernel, dim3(n_rows), dim3(kArgmaxParts), 0, stream, parts, ids);
}

}  // namespace lamina::cudaexec::detail
