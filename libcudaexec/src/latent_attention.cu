#include "latent_attention.h"

#include <cuda_fp16.h>

#include <cmath>

#include "attention_fold.cuh"
#include "cuda_check.h"
#include "launch.cuh"

namespace lamina::cudaexec::detail {
namespace {

// A block: kHeadsPerBlock heads of one query row, kLanesPerHead threads per
// head (a head's lanes in one warp), over the keys of one span in chunks of
// kChunkKeys at positions that are multiples of kChunkKeys.
constexpr uint32_t kHeadsPerBlock = 16, kLanesPerHead = 16, kChunkKeys = 32;
constexpr uint32_t kThreads = kHeadsPerBlock * kLanesPerHead;
constexpr uint32_t kMaxKeyDim = 1024, kMaxValueDim = 512;
constexpr uint32_t kValuesPerLane = kMaxValueDim / kLanesPerHead;
static_assert(kChunkKeys == 2 * kLanesPerHead && kAttentionSpan % kChunkKeys == 0);

// Shared memory: the heads' queries (f32), a chunk of key rows (f16, rows
// padded by one pair so a head's lanes read 16 rows from distinct banks) and
// the chunk's weights per head.
std::size_t smem_bytes(uint32_t dk) {
  return kHeadsPerBlock * dk * sizeof(float) + kChunkKeys * (dk + 2) * sizeof(__half) +
         kHeadsPerBlock * kChunkKeys * sizeof(float);
}

__global__ void __launch_bounds__(kThreads) latent_attention_kernel(const SpanParams p) {
  extern __shared__ __align__(16) unsigned char smem[];
  enter_dependent_kernel();
  const AttentionShape& s = p.s;
  const uint32_t row = blockIdx.x, span = blockIdx.z;
  const uint32_t pos = p.pos[row], first = first_key(s, pos);
  const uint32_t span_first = span * kAttentionSpan;
  if (span_first > pos || span_first + kAttentionSpan <= first) return;
  const uint32_t lo = max(span_first, first), hi = min(span_first + kAttentionSpan - 1, pos);
  const uint32_t dk = s.head_dim_k, dv = s.head_dim_v, v_at = dk - dv, pairs = dk / 2, ks = dk + 2;
  float* qs = reinterpret_cast<float*>(smem);
  __half* keys = reinterpret_cast<__half*>(qs + kHeadsPerBlock * dk);
  float* weights = reinterpret_cast<float*>(keys + kChunkKeys * ks);
  const uint32_t tid = threadIdx.x, hl = tid / kLanesPerHead, lane = tid % kLanesPerHead;
  const uint32_t head0 = blockIdx.y * kHeadsPerBlock, head = head0 + hl;
  for (uint32_t i = tid; i < kHeadsPerBlock * dk; i += kThreads) {
    const uint32_t h = head0 + i / dk;
    qs[i] = h < s.n_head ? p.q[row * p.q_stride + std::size_t{h} * dk + i % dk] : 0.0f;
  }
  // The span's rows: one block of the cache.
  const __half* cache = p.kv.k + p.kv.k_offset(p.seq[row], p.layer, span_first);
  const float2* q_head = reinterpret_cast<const float2*>(qs + hl * dk);
  float* w_head = weights + hl * kChunkKeys;

  float m = -INFINITY, l = 0.0f, o[kValuesPerLane];
#pragma unroll
  for (uint32_t j = 0; j < kValuesPerLane; ++j) o[j] = 0.0f;
  for (uint32_t c0 = lo / kChunkKeys * kChunkKeys; c0 <= hi; c0 += kChunkKeys) {
    __syncthreads();  // the queries are in; the previous chunk's keys and weights are read
    for (uint32_t i = tid; i < kChunkKeys * pairs; i += kThreads) {
      const uint32_t k = i / pairs, d2 = i % pairs, at = c0 + k;
      reinterpret_cast<__half2*>(keys + k * ks)[d2] =
          at >= lo && at <= hi ? reinterpret_cast<const __half2*>(cache + std::size_t{at - span_first} * p.kv.k_dim)[d2]
                               : __float2half2_rn(0.0f);
    }
    __syncthreads();
    // Scores of keys lane and lane + 16, each a dot in dimension order.
    float sc[2];
#pragma unroll
    for (uint32_t j = 0; j < 2; ++j) {
      const uint32_t k = lane + j * kLanesPerHead;
      const __half2* key = reinterpret_cast<const __half2*>(keys + k * ks);
      float acc = 0.0f;
      for (uint32_t d2 = 0; d2 < pairs; ++d2) {
        const float2 kv = __half22float2(key[d2]);
        const float2 qv = q_head[d2];
        acc = __fmaf_rn(qv.x, kv.x, acc);
        acc = __fmaf_rn(qv.y, kv.y, acc);
      }
      const uint32_t at = c0 + k;
      sc[j] = at >= lo && at <= hi ? __fmul_rn(acc, p.scale_log2) : -INFINITY;
    }
    float chunk_max = fmaxf(sc[0], sc[1]);
#pragma unroll
    for (uint32_t off = kLanesPerHead / 2; off > 0; off >>= 1)
      chunk_max = fmaxf(chunk_max, __shfl_xor_sync(0xffffffffu, chunk_max, off, kLanesPerHead));
    const float m_new = fmaxf(m, chunk_max);  // finite: a chunk holds at least one key
    const float a = rescale(m, m_new);
    w_head[lane] = sc[0] == -INFINITY ? 0.0f : exp2_approx(__fsub_rn(sc[0], m_new));
    w_head[lane + kLanesPerHead] = sc[1] == -INFINITY ? 0.0f : exp2_approx(__fsub_rn(sc[1], m_new));
    __syncwarp();
    // Every lane of a head adds the same weights in key order: one l per head.
    float sum = 0.0f;
    for (uint32_t k = 0; k < kChunkKeys; ++k) sum = __fadd_rn(sum, w_head[k]);
    l = __fmaf_rn(l, a, sum);
#pragma unroll
    for (uint32_t j = 0; j < kValuesPerLane; ++j) {
      const uint32_t d = lane + j * kLanesPerHead;
      if (d < dv) {
        float acc = __fmul_rn(o[j], a);
        for (uint32_t k = 0; k < kChunkKeys; ++k) acc = __fmaf_rn(w_head[k], __half2float(keys[k * ks + v_at + d]), acc);
        o[j] = acc;
      }
    }
    m = m_new;
  }

  if (head >= s.n_head) return;
  if (first / kAttentionSpan == pos / kAttentionSpan) {
    float* dst = p.out + row * p.out_stride + std::size_t{head} * dv;
#pragma unroll
    for (uint32_t j = 0; j < kValuesPerLane; ++j)
      if (const uint32_t d = lane + j * kLanesPerHead; d < dv) dst[d] = row_output(o[j], m, l, s, head);
    return;
  }
  float* rec = p.records + ((std::size_t{row} * s.n_head + head) * p.n_spans + span) * (dv + 2);
  if (lane == 0) {
    rec[0] = m;
    rec[1] = l;
  }
#pragma unroll
  for (uint32_t j = 0; j < kValuesPerLane; ++j)
    if (const uint32_t d = lane + j * kLanesPerHead; d < dv) rec[2 + d] = o[j];
}

}  // namespace

const char* latent_attention_unsupported(const AttentionShape& s) {
  if (s.n_head_kv != 1) return "latent attention with more than one KV head";
  if (s.head_dim_k == 0 || s.head_dim_k % 2 != 0 || s.head_dim_k > kMaxKeyDim)
    return "latent key rows of an odd width or wider than 1024";
  if (s.head_dim_v == 0 || s.head_dim_v > s.head_dim_k || s.head_dim_v > kMaxValueDim)
    return "latent values wider than the keys or than 512";
  if (s.softcap > 0.0f || s.sinks != nullptr) return "a soft cap or sinks in latent attention";
  return "";
}

void latent_attention(const AttentionShape& shape, const KvView& kv, uint32_t layer, const float* q,
                      std::size_t q_stride, const uint32_t* seq, const uint32_t* pos, uint32_t n_rows,
                      uint32_t n_spans, float* workspace, float* out, std::size_t out_stride, cudaStream_t stream) {
  if (n_rows == 0 || n_spans == 0) return;
  allow_dynamic_smem(reinterpret_cast<const void*>(latent_attention_kernel), smem_bytes(kMaxKeyDim));
  SpanParams p = span_params(shape, kv, layer, q, q_stride, seq, pos, workspace, out, out_stride);
  p.n_spans = n_spans;
  const dim3 grid(n_rows, (shape.n_head + kHeadsPerBlock - 1) / kHeadsPerBlock, n_spans);
  launch_kernel(latent_attention_kernel, grid, dim3(kThreads), smem_bytes(shape.head_dim_k), stream, p);
  fold_attention_spans(shape, pos, n_rows, n_spans, workspace, out, out_stride, stream);
}

}  // namespace lamina::cudaexec::detail
