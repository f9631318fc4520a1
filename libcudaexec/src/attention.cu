#include "attention.h"

#include <cfloat>

#include "cuda_check.h"
#include "launch.cuh"

namespace lamina::cudaexec::detail {
namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;

// Fixed-order block reductions (same bits on every run).
__device__ float block_reduce(float v, float* scratch, bool is_max) {
  for (int o = 16; o > 0; o >>= 1) {
    const float other = __shfl_xor_sync(0xffffffffu, v, o);
    v = is_max ? fmaxf(v, other) : v + other;
  }
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  float r = scratch[0];
  for (int i = 1; i < kWarps; ++i) r = is_max ? fmaxf(r, scratch[i]) : r + scratch[i];
  __syncthreads();
  return r;
}

struct RowRange {
  uint32_t begin, end;
};

__device__ RowRange key_range(const AttentionShape& s, uint32_t pos, uint32_t chunk) {
  const uint32_t p1 = pos + 1;
  const uint32_t p0 = s.window > 0 && p1 > s.window ? p1 - s.window : 0;
  const uint32_t begin = p0 + chunk * kAttentionChunk;
  const uint32_t end = min(p1, begin + kAttentionChunk);
  return {begin, begin < p1 ? end : begin};
}

// Partial record per (row, head, chunk): max score, sum of exp, then head_dim_v weighted values.
__global__ void attention_chunks_kernel(AttentionShape s, KvView kv, uint32_t layer, const float* q,
                                        std::size_t q_stride, const uint32_t* seq, const uint32_t* pos,
                                        uint32_t n_chunks, float* part) {
  extern __shared__ float smem[];  // q head (head_dim_k), then kAttentionChunk scores
  float* qh = smem;
  float* scores = smem + s.head_dim_k;
  __shared__ float scratch[kWarps];
  enter_dependent_kernel();

  const uint32_t chunk = blockIdx.x, head = blockIdx.y, r = blockIdx.z;
  const uint32_t kv_head = head / (s.n_head / s.n_head_kv);
  float* rec = part + ((std::size_t{r} * s.n_head + head) * n_chunks + chunk) * (s.head_dim_v + 2);
  const RowRange keys = key_range(s, pos[r], chunk);
  if (keys.begin >= keys.end) {
    if (threadIdx.x == 0) {
      rec[0] = -FLT_MAX;
      rec[1] = 0.0f;
    }
    return;
  }
  const float* qr = q + r * q_stride + std::size_t{head} * s.head_dim_k;
  for (uint32_t d = threadIdx.x; d < s.head_dim_k; d += blockDim.x) qh[d] = qr[d];
  __syncthreads();

  const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const __half* kbase = kv.k + kv.k_offset(seq[r], layer, 0) + std::size_t{kv_head} * s.head_dim_k;
  for (uint32_t j = keys.begin + warp; j < keys.end; j += kWarps) {
    const __half* kj = kbase + std::size_t{j} * kv.k_dim;
    float dot = 0.0f;
    for (uint32_t d = lane; d < s.head_dim_k; d += 32) dot = fmaf(qh[d], __half2float(kj[d]), dot);
    for (int o = 16; o > 0; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
    float score = dot * s.scale;
    if (s.softcap > 0.0f) score = s.softcap * tanhf(score / s.softcap);
    if (lane == 0) scores[j - keys.begin] = score;
  }
  __syncthreads();
  const uint32_t n = keys.end - keys.begin;
  float m = -FLT_MAX;
  for (uint32_t j = threadIdx.x; j < n; j += blockDim.x) m = fmaxf(m, scores[j]);
  m = block_reduce(m, scratch, true);
  float l = 0.0f;
  for (uint32_t j = threadIdx.x; j < n; j += blockDim.x) {
    const float p = expf(scores[j] - m);
    scores[j] = p;
    l += p;
  }
  l = block_reduce(l, scratch, false);  // also orders the score writes before the reads below

  const __half* vbase = kv.v + kv.v_offset(seq[r], layer, keys.begin) + std::size_t{kv_head} * s.head_dim_v;
  for (uint32_t d = threadIdx.x; d < s.head_dim_v; d += blockDim.x) {
    float acc = 0.0f;
    for (uint32_t j = 0; j < n; ++j) acc = fmaf(scores[j], __half2float(vbase[std::size_t{j} * kv.v_dim + d]), acc);
    rec[2 + d] = acc;
  }
  if (threadIdx.x == 0) {
    rec[0] = m;
    rec[1] = l;
  }
}

__global__ void attention_combine_kernel(AttentionShape s, uint32_t n_chunks, const float* part, float* out,
                                         std::size_t out_stride) {
  enter_dependent_kernel();
  const uint32_t head = blockIdx.x, r = blockIdx.y;
  const float* recs = part + (std::size_t{r} * s.n_head + head) * n_chunks * (s.head_dim_v + 2);
  const std::size_t rec_len = s.head_dim_v + 2;
  float m = -FLT_MAX;
  for (uint32_t c = 0; c < n_chunks; ++c)
    if (recs[c * rec_len + 1] > 0.0f) m = fmaxf(m, recs[c * rec_len]);
  float l = 0.0f;
  for (uint32_t c = 0; c < n_chunks; ++c) {
    const float* rec = recs + c * rec_len;
    if (rec[1] > 0.0f) l += rec[1] * expf(rec[0] - m);
  }
  const float inv = 1.0f / l;
  float* o = out + r * out_stride + std::size_t{head} * s.head_dim_v;
  for (uint32_t d = threadIdx.x; d < s.head_dim_v; d += blockDim.x) {
    float acc = 0.0f;
    for (uint32_t c = 0; c < n_chunks; ++c) {
      const float* rec = recs + c * rec_len;
      if (rec[1] > 0.0f) acc = fmaf(rec[2 + d], expf(rec[0] - m), acc);
    }
    o[d] = acc * inv;
  }
}

}  // namespace

std::size_t attention_workspace_floats(const AttentionShape& shape, uint32_t n_rows, uint32_t n_chunks) {
  return std::size_t{n_rows} * shape.n_head * n_chunks * (shape.head_dim_v + 2);
}

void attention(const AttentionShape& shape, const KvView& kv, uint32_t layer, const float* q, std::size_t q_stride,
               const uint32_t* seq, const uint32_t* pos, uint32_t n_rows, uint32_t n_chunks, float* workspace,
               float* out, std::size_t out_stride, cudaStream_t stream) {
  if (n_rows == 0) return;
  const std::size_t smem = (shape.head_dim_k + kAttentionChunk) * sizeof(float);
  launch_kernel(attention_chunks_kernel, dim3(n_chunks, shape.n_head, n_rows), dim3(kThreads), smem, stream, shape, kv,
                layer, q, q_stride, seq, pos, n_chunks, workspace);
  launch_kernel(attention_combine_kernel, dim3(shape.n_head, n_rows), dim3(kThreads), 0, stream, shape, n_chunks,
                workspace, out, out_stride);
}

}  // namespace lamina::cudaexec::detail
