#include "attention.h"

#include <algorithm>
#include <cmath>

#include "attention_fold.cuh"
#include "cuda_check.h"
#include "launch.cuh"
#include "mma_primitives.cuh"

namespace lamina::cudaexec::detail {
namespace {

// Dot products q.k as scores in the log2 domain, the soft cap decided once
// for all of a thread's scores (not per score: that reloads the parameters).
template <int N>
__device__ __forceinline__ void log2_scores(float (&sc)[N][4], const SpanParams& p) {
  if (p.s.softcap > 0.0f) {
    const float scale = p.s.scale, cap = p.s.softcap;
#pragma unroll
    for (int nt = 0; nt < N; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i)
        sc[nt][i] = __fmul_rn(__fmul_rn(cap, tanhf(__fdiv_rn(__fmul_rn(sc[nt][i], scale), cap))), kLog2e);
  } else {
    const float scale_log2 = p.scale_log2;
#pragma unroll
    for (int nt = 0; nt < N; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) sc[nt][i] = __fmul_rn(sc[nt][i], scale_log2);
  }
}

__device__ __forceinline__ uint32_t pack_half2(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&h);
}
// The high f16 parts of two values and the f16 parts of what they leave
// (two packed conversions; the high parts widen back exactly).
__device__ __forceinline__ void split_half2(float a, float b, uint32_t& hi, uint32_t& lo) {
  const __half2 h = __floats2half2_rn(a, b);
  const float2 back = __half22float2(h);
  hi = *reinterpret_cast<const uint32_t*>(&h);
  lo = pack_half2(__fsub_rn(a, back.x), __fsub_rn(b, back.y));
}

// Attention for a tile of query rows: D is the head size padded to a
// multiple of 16 (the f16 MMA's k), W the warps (16 rows each). Per span
// (kPerTile false) a block computes span blockIdx.z and leaves records for
// attention_combine_kernel; per tile it computes every span of its tile and
// folds each into the output as it ends, in the combine's order and
// arithmetic (the same bits, without the records and the second pass).
template <int D, int W, bool kPerTile>
__global__ void __launch_bounds__(32 * W) attention_span_kernel(const SpanParams p) {
  constexpr int kRows = 16 * W;
  constexpr int kStride = D + 8;  // halves per shared row: 16 bytes of padding keep ldmatrix conflict-free
  constexpr int kChunk = static_cast<int>(kAttentionChunk);
  extern __shared__ __align__(16) uint8_t smem[];
  __half* q_hi = reinterpret_cast<__half*>(smem);
  __half* q_lo = q_hi + kRows * kStride;
  __half* k_buf = q_lo + kRows * kStride;  // [2][kChunk][kStride]
  __half* v_buf = k_buf + 2 * kChunk * kStride;
  auto* row_pos = reinterpret_cast<uint32_t*>(v_buf + 2 * kChunk * kStride);
  uint32_t* row_lo = row_pos + kRows;

  const int tid = static_cast<int>(threadIdx.x), lane = tid & 31, warp = tid >> 5;
  const int gid = lane >> 2, tig = lane & 3;
  const AttentionShape& s = p.s;
  const uint32_t kvh = blockIdx.y;
  const uint32_t group = s.n_head / s.n_head_kv;
  wait_for_prior_kernels();
  // Per tile, the latest (longest) tiles start first.
  const AttentionTile tile = p.tiles[kPerTile ? gridDim.x - 1 - blockIdx.x : blockIdx.x];
  const uint32_t n_valid = tile.n_tokens * group;

  for (int r = tid; r < kRows; r += 32 * W) {
    if (static_cast<uint32_t>(r) < n_valid) {
      const uint32_t pos = p.pos[tile.first_row + r / group];
      row_pos[r] = pos;
      row_lo[r] = first_key(s, pos);
    } else {
      row_pos[r] = 0;
      row_lo[r] = 1;  // no key is both >= 1 and <= 0
    }
  }
  __syncthreads();
  // The keys of this span that some row of the tile needs.
  uint32_t min_lo = 0xFFFFFFFFu, max_pos = 0;
  for (uint32_t r = 0; r < n_valid; ++r) {
    min_lo = min(min_lo, row_lo[r]);
    max_pos = max(max_pos, row_pos[r]);
  }
  uint32_t key_begin = min_lo, key_end = max_pos + 1;
  if constexpr (!kPerTile) {
    const uint32_t span0 = blockIdx.z * kAttentionSpan;
    key_begin = max(span0, min_lo);
    key_end = min(span0 + kAttentionSpan, max_pos + 1);
  }
  if (n_valid == 0 || key_begin >= key_end) return;
  release_next_kernel();
  const uint32_t seq = p.seq[tile.first_row];

  // The query rows as high and low f16 parts; columns past the head size are
  // 0. Every load of a thread is issued before the first conversion waits.
  constexpr int kQuadsPerThread = D / 8;  // (16 W rows x D / 4 float4s) / 32 W threads
  float4 quads[kQuadsPerThread];
#pragma unroll
  for (int j = 0; j < kQuadsPerThread; ++j) {
    const int i = tid + j * 32 * W, r = i / (D / 4), d = (i % (D / 4)) * 4;
    const bool valid = static_cast<uint32_t>(r) < n_valid && static_cast<uint32_t>(d) < s.head_dim_k;
    const float* qr = p.q + (tile.first_row + r / group) * p.q_stride +
                      (kvh * group + static_cast<uint32_t>(r) % group) * s.head_dim_k;
    quads[j] = valid ? *reinterpret_cast<const float4*>(qr + d) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  }
#pragma unroll
  for (int j = 0; j < kQuadsPerThread; ++j) {
    const int i = tid + j * 32 * W, r = i / (D / 4), d = (i % (D / 4)) * 4;
    uint32_t hi[2], lo[2];
    split_half2(quads[j].x, quads[j].y, hi[0], lo[0]);
    split_half2(quads[j].z, quads[j].w, hi[1], lo[1]);
    *reinterpret_cast<uint2*>(q_hi + r * kStride + d) = make_uint2(hi[0], hi[1]);
    *reinterpret_cast<uint2*>(q_lo + r * kStride + d) = make_uint2(lo[0], lo[1]);
  }
  // Head columns past the cache's width stay zero in both chunk buffers.
  if (s.head_dim_k < static_cast<uint32_t>(D) || s.head_dim_v < static_cast<uint32_t>(D)) {
    for (int i = tid; i < 2 * kChunk * D; i += 32 * W) {
      const int row = i / D, d = i % D;
      if (static_cast<uint32_t>(d) >= s.head_dim_k) k_buf[row * kStride + d] = __float2half_rn(0.0f);
      if (static_cast<uint32_t>(d) >= s.head_dim_v) v_buf[row * kStride + d] = __float2half_rn(0.0f);
    }
  }

  // This sequence's keys and values of this KV head at layer `layer`: a
  // chunk's rows lie in one block of the cache, one row per position.
  auto load_chunk = [&](uint32_t first, int buf) {
    const std::size_t block_row = p.kv.row(seq, p.layer, first);
    const __half* k_rows = p.kv.k + block_row * p.kv.k_dim + kvh * s.head_dim_k;
    const __half* v_rows = p.kv.v + block_row * p.kv.v_dim + kvh * s.head_dim_v;
#pragma unroll
    for (int i = tid; i < kChunk * (D / 8); i += 32 * W) {
      const int key = i / (D / 8), d0 = (i % (D / 8)) * 8;
      if (static_cast<uint32_t>(d0) < s.head_dim_k) {
        cp_async16(k_buf + (buf * kChunk + key) * kStride + d0, k_rows + std::size_t(key) * p.kv.k_dim + d0);
      }
      if (static_cast<uint32_t>(d0) < s.head_dim_v) {
        cp_async16(v_buf + (buf * kChunk + key) * kStride + d0, v_rows + std::size_t(key) * p.kv.v_dim + d0);
      }
    }
  };

  const uint32_t chunk0 = key_begin / kAttentionChunk * kAttentionChunk;
  const int n_chunks = static_cast<int>((key_end - chunk0 + kAttentionChunk - 1) / kAttentionChunk);
  load_chunk(chunk0, 0);
  cp_async_commit();

  // This thread's two rows (h = 0, 1) of its warp's 16.
  const int r_base = 16 * warp + gid;
  const bool warp_busy = static_cast<uint32_t>(16 * warp) < n_valid;
  uint32_t pos_r[2], lo_r[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    pos_r[h] = row_pos[r_base + 8 * h];
    lo_r[h] = row_lo[r_base + 8 * h];
  }
  // The keys every row of this warp attends to: chunks inside need no mask.
  uint32_t warp_lo = row_lo[16 * warp + (lane & 15)], warp_pos = row_pos[16 * warp + (lane & 15)];
#pragma unroll
  for (int step = 1; step < 16; step <<= 1) {
    warp_lo = max(warp_lo, __shfl_xor_sync(0xFFFFFFFFu, warp_lo, step));
    warp_pos = min(warp_pos, __shfl_xor_sync(0xFFFFFFFFu, warp_pos, step));
  }
  float m_run[2], l_run[2];
  float o[D / 8][4];
  auto start_span = [&] {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      m_run[h] = -INFINITY;
      l_run[h] = 0.0f;
    }
#pragma unroll
    for (int dt = 0; dt < D / 8; ++dt)
#pragma unroll
      for (int i = 0; i < 4; ++i) o[dt][i] = 0.0f;
  };
  start_span();
  // Per tile: the fold of the spans ended so far (its O lives in the output).
  float m_fold[2] = {-INFINITY, -INFINITY}, l_fold[2] = {0.0f, 0.0f};
  const std::size_t rec_len = s.head_dim_v + 2;

  // The end of `span`: rows whose keys lie in it alone get their output;
  // the others a record for attention_combine_kernel, or per tile their
  // fold (combine's arithmetic, O read back from the output).
  auto finish_span = [&](uint32_t span) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = r_base + 8 * h;
      if (static_cast<uint32_t>(r) >= n_valid) continue;
      const uint32_t first_span = lo_r[h] / kAttentionSpan, last_span = pos_r[h] / kAttentionSpan;
      if (span < first_span || span > last_span) continue;
      const uint32_t row = tile.first_row + static_cast<uint32_t>(r) / group;
      const uint32_t head = kvh * group + static_cast<uint32_t>(r) % group;
      float* dst = p.out + row * p.out_stride + head * s.head_dim_v;
      if (first_span == last_span) {
#pragma unroll
        for (int dt = 0; dt < D / 8; ++dt)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const uint32_t d = 8 * dt + 2 * tig + e;
            if (d < s.head_dim_v) dst[d] = row_output(o[dt][2 * h + e], m_run[h], l_run[h], s, head);
          }
      } else if constexpr (kPerTile) {
        float a, b;
        fold_span(m_fold[h], l_fold[h], m_run[h], l_run[h], a, b);
        const bool first = span == first_span, last = span == last_span;
        // All of the row's earlier fold read before the first use (one wait).
        float prev[D / 8][2];
#pragma unroll
        for (int dt = 0; dt < D / 8; ++dt)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const uint32_t d = 8 * dt + 2 * tig + e;
            prev[dt][e] = !first && d < s.head_dim_v ? dst[d] : 0.0f;
          }
#pragma unroll
        for (int dt = 0; dt < D / 8; ++dt)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const uint32_t d = 8 * dt + 2 * tig + e;
            const float folded = __fmaf_rn(o[dt][2 * h + e], b, __fmul_rn(prev[dt][e], a));
            if (d < s.head_dim_v) dst[d] = last ? row_output(folded, m_fold[h], l_fold[h], s, head) : folded;
          }
      } else {
        float* rec = p.records + ((static_cast<std::size_t>(row) * s.n_head + head) * p.n_spans + span) * rec_len;
        if (tig == 0) {
          rec[0] = m_run[h];
          rec[1] = l_run[h];
        }
#pragma unroll
        for (int dt = 0; dt < D / 8; ++dt)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const uint32_t d = 8 * dt + 2 * tig + e;
            if (d < s.head_dim_v) rec[2 + d] = o[dt][2 * h + e];
          }
      }
    }
  };

  for (int c = 0; c < n_chunks; ++c) {
    if (c + 1 < n_chunks) load_chunk(chunk0 + (c + 1) * kAttentionChunk, (c + 1) & 1);
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();
    if (warp_busy) {
      const __half* kc = k_buf + (c & 1) * kChunk * kStride;
      const __half* vc = v_buf + (c & 1) * kChunk * kStride;
      const uint32_t first = chunk0 + c * kAttentionChunk;

      // Scores of 16 rows x 64 keys.
      float sc[8][4];
#pragma unroll
      for (int nt = 0; nt < 8; ++nt)
#pragma unroll
        for (int i = 0; i < 4; ++i) sc[nt][i] = 0.0f;
#pragma unroll
      for (int kd = 0; kd < D / 16; ++kd) {
        uint32_t ah[4], al[4];
        const int q_row = 16 * warp + (lane & 7) + 8 * ((lane >> 3) & 1);
        const int q_col = 16 * kd + 8 * (lane >> 4);
        ldmatrix_x4(ah, q_hi + q_row * kStride + q_col);
        ldmatrix_x4(al, q_lo + q_row * kStride + q_col);
#pragma unroll
        for (int nt = 0; nt < 8; nt += 2) {
          uint32_t b[4];
          ldmatrix_x4(b, kc + (8 * (nt + (lane >> 4)) + (lane & 7)) * kStride + 16 * kd + 8 * ((lane >> 3) & 1));
          mma_f16_k16(sc[nt], ah[0], ah[1], ah[2], ah[3], b[0], b[1]);
          mma_f16_k16(sc[nt], al[0], al[1], al[2], al[3], b[0], b[1]);
          mma_f16_k16(sc[nt + 1], ah[0], ah[1], ah[2], ah[3], b[2], b[3]);
          mma_f16_k16(sc[nt + 1], al[0], al[1], al[2], al[3], b[2], b[3]);
        }
      }
      // Masked log2 scores (chunks inside every row's keys need no mask),
      // then the chunk's row maxima (a tree: max is exact in any order).
      log2_scores(sc, p);
      if (first < warp_lo || first + (kAttentionChunk - 1) > warp_pos) {
#pragma unroll
        for (int nt = 0; nt < 8; ++nt)
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const int h = i >> 1;
            const uint32_t key = first + 8 * nt + 2 * tig + (i & 1);
            if (key < lo_r[h] || key > pos_r[h]) sc[nt][i] = -INFINITY;
          }
      }
      float m_chunk[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float m8[8];
#pragma unroll
        for (int nt = 0; nt < 8; ++nt) m8[nt] = fmaxf(sc[nt][2 * h], sc[nt][2 * h + 1]);
#pragma unroll
        for (int w = 4; w >= 1; w >>= 1)
#pragma unroll
          for (int j = 0; j < w; ++j) m8[j] = fmaxf(m8[j], m8[j + w]);
        m_chunk[h] = m8[0];
      }
      float alpha[2], ref[2], row_sum[2] = {0.0f, 0.0f};
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        m_chunk[h] = fmaxf(m_chunk[h], __shfl_xor_sync(0xFFFFFFFFu, m_chunk[h], 1));
        m_chunk[h] = fmaxf(m_chunk[h], __shfl_xor_sync(0xFFFFFFFFu, m_chunk[h], 2));
        const float m_new = fmaxf(m_run[h], m_chunk[h]);
        alpha[h] = rescale(m_run[h], m_new);
        ref[h] = m_new == -INFINITY ? 0.0f : m_new;
        m_run[h] = m_new;
      }
#pragma unroll
      for (int nt = 0; nt < 8; ++nt) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          sc[nt][i] = exp2_approx(__fsub_rn(sc[nt][i], ref[i >> 1]));
          row_sum[i >> 1] = __fadd_rn(row_sum[i >> 1], sc[nt][i]);
        }
      }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        row_sum[h] = __fadd_rn(row_sum[h], __shfl_xor_sync(0xFFFFFFFFu, row_sum[h], 1));
        row_sum[h] = __fadd_rn(row_sum[h], __shfl_xor_sync(0xFFFFFFFFu, row_sum[h], 2));
        l_run[h] = __fmaf_rn(l_run[h], alpha[h], row_sum[h]);
      }
#pragma unroll
      for (int dt = 0; dt < D / 8; ++dt)
#pragma unroll
        for (int i = 0; i < 4; ++i) o[dt][i] = __fmul_rn(o[dt][i], alpha[i >> 1]);
      // O += P V, the weights split into high and low f16 parts.
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        uint32_t ph[4], pl[4];
        split_half2(sc[2 * j][0], sc[2 * j][1], ph[0], pl[0]);
        split_half2(sc[2 * j][2], sc[2 * j][3], ph[1], pl[1]);
        split_half2(sc[2 * j + 1][0], sc[2 * j + 1][1], ph[2], pl[2]);
        split_half2(sc[2 * j + 1][2], sc[2 * j + 1][3], ph[3], pl[3]);
#pragma unroll
        for (int dt = 0; dt < D / 8; dt += 2) {
          uint32_t b[4];
          ldmatrix_x4_trans(b, vc + (16 * j + (lane & 7) + 8 * ((lane >> 3) & 1)) * kStride + 8 * (dt + (lane >> 4)));
          mma_f16_k16(o[dt], ph[0], ph[1], ph[2], ph[3], b[0], b[1]);
          mma_f16_k16(o[dt], pl[0], pl[1], pl[2], pl[3], b[0], b[1]);
          mma_f16_k16(o[dt + 1], ph[0], ph[1], ph[2], ph[3], b[2], b[3]);
          mma_f16_k16(o[dt + 1], pl[0], pl[1], pl[2], pl[3], b[2], b[3]);
        }
      }
      // A span ends with this chunk (per span: the block's last chunk).
      if (c + 1 == n_chunks || (first + kAttentionChunk) % kAttentionSpan == 0) {
        finish_span(first / kAttentionSpan);
        if constexpr (kPerTile) start_span();
      }
    }
    __syncthreads();
  }
  cp_async_wait<0>();
}

// The spans of rows with keys in more than one, folded left to right.
__global__ void attention_combine_kernel(const SpanParams p) {
  enter_dependent_kernel();
  const AttentionShape& s = p.s;
  const uint32_t row = blockIdx.x, head = blockIdx.y;
  const uint32_t pos = p.pos[row];
  const uint32_t first_span = first_key(s, pos) / kAttentionSpan, last_span = pos / kAttentionSpan;
  if (first_span == last_span) return;
  const std::size_t rec_len = s.head_dim_v + 2;
  const float* recs = p.records + (static_cast<std::size_t>(row) * s.n_head + head) * p.n_spans * rec_len;
  float* dst = p.out + row * p.out_stride + head * s.head_dim_v;
  for (uint32_t d = threadIdx.x; d < s.head_dim_v; d += blockDim.x) {
    float m = -INFINITY, l = 0.0f, o = 0.0f;
    for (uint32_t sp = first_span; sp <= last_span; ++sp) {
      const float* rec = recs + sp * rec_len;
      float a, b;
      fold_span(m, l, rec[0], rec[1], a, b);
      o = __fmaf_rn(rec[2 + d], b, __fmul_rn(o, a));
    }
    dst[d] = row_output(o, m, l, s, head);
  }
}

void launch_combine(const SpanParams& p, uint32_t n_rows, cudaStream_t stream) {
  launch_kernel(attention_combine_kernel, dim3(n_rows, p.s.n_head), dim3(p.s.head_dim_v <= 64 ? 64 : 128), 0, stream,
                p);
}

template <int D, int W, bool kPerTile>
void launch_spans(const SpanParams& p, uint32_t n_tiles, cudaStream_t stream) {
  constexpr int kRows = 16 * W;
  constexpr int kStride = D + 8;
  constexpr std::size_t kSmem =
      (2 * kRows * kStride + 4 * kAttentionChunk * kStride) * sizeof(__half) + 2 * kRows * sizeof(uint32_t);
  allow_dynamic_smem(reinterpret_cast<const void*>(attention_span_kernel<D, W, kPerTile>), kSmem);
  launch_kernel(attention_span_kernel<D, W, kPerTile>, dim3(n_tiles, p.s.n_head_kv, kPerTile ? 1 : p.n_spans),
                dim3(32 * W), kSmem, stream, p);
}

// Per tile only for four-warp blocks and heads up to 128 wide: wider heads
// leave no registers for it.
template <int W, bool kPerTile>
void launch_spans_for_width(const SpanParams& p, uint32_t n_tiles, cudaStream_t stream) {
  const uint32_t width = std::max(p.s.head_dim_k, p.s.head_dim_v);
  if (width <= 16) {
    launch_spans<16, W, kPerTile>(p, n_tiles, stream);
  } else if (width <= 32) {
    launch_spans<32, W, kPerTile>(p, n_tiles, stream);
  } else if (width <= 64) {
    launch_spans<64, W, kPerTile>(p, n_tiles, stream);
  } else if (width <= 128) {
    launch_spans<128, W, kPerTile>(p, n_tiles, stream);
  } else if constexpr (!kPerTile) {
    launch_spans<256, W, false>(p, n_tiles, stream);
  }
}

// Tokens per tile: 64 query rows per block, n_head / n_head_kv rows per token.
uint32_t attention_tile_tokens(const AttentionShape& s) { return 64 / (s.n_head / s.n_head_kv); }

// Whether a launch of n_tiles tiles over n_spans spans is faster per tile.
bool attention_per_tile_pays(const AttentionShape& s, uint32_t n_tiles, uint32_t n_spans, int sm_count) {
  return n_spans > 1 && std::max(s.head_dim_k, s.head_dim_v) <= kAttentionPerTileMaxHeadDim &&
         2 * std::size_t{n_tiles} * s.n_head_kv >= kAttentionPerTileMinBlocksPer2Sms * static_cast<std::size_t>(sm_count);
}

}  // namespace

const char* attention_unsupported(const AttentionShape& s) {
  if (s.head_dim_k % 8 != 0 || s.head_dim_v % 8 != 0) return "head sizes that are not a multiple of 8";
  if (std::max(s.head_dim_k, s.head_dim_v) > kAttentionMaxHeadDim) return "head sizes above 256";
  if (s.n_head / s.n_head_kv > 64) return "more than 64 query heads per KV head";
  return "";
}

AttentionPlan plan_attention(const AttentionShape& shape, const uint32_t* seq, uint32_t n, uint32_t max_pos,
                             int sm_count, AttentionTile* tiles) {
  AttentionPlan plan;
  const uint32_t tile_tokens = attention_tile_tokens(shape);
  for (uint32_t r = 0; r < n;) {
    uint32_t end = r + 1;
    while (end < n && end - r < tile_tokens && seq[end] == seq[r]) ++end;
    tiles[plan.n_tiles++] = {r, end - r};
    r = end;
  }
  plan.n_spans = attention_spans(max_pos);
  plan.single_warp = plan.n_tiles == n && shape.n_head / shape.n_head_kv <= 16;
  plan.per_tile = attention_per_tile_pays(shape, plan.n_tiles, plan.n_spans, sm_count);
  return plan;
}

AttentionPlan plan_decode_attention(const AttentionShape& shape, uint32_t n, uint32_t n_spans) {
  return {n, n_spans, shape.n_head / shape.n_head_kv <= 16, false};
}

std::size_t attention_workspace_floats(const AttentionShape& shape, uint32_t n_rows, uint32_t n_spans) {
  return std::size_t{n_rows} * shape.n_head * n_spans * (shape.head_dim_v + 2);
}

void attention(const AttentionShape& shape, const KvView& kv, uint32_t layer, const float* q, std::size_t q_stride,
               const uint32_t* seq, const uint32_t* pos, const AttentionTile* tiles, uint32_t n_rows,
               const AttentionPlan& plan, float* workspace, float* out, std::size_t out_stride, cudaStream_t stream) {
  if (n_rows == 0 || plan.n_tiles == 0) return;
  SpanParams p = span_params(shape, kv, layer, q, q_stride, seq, pos, workspace, out, out_stride);
  p.tiles = tiles;
  p.n_spans = plan.n_spans;
  const bool per_tile =
      plan.per_tile && !plan.single_warp && std::max(shape.head_dim_k, shape.head_dim_v) <= kAttentionPerTileMaxHeadDim;
  if (plan.single_warp) {
    launch_spans_for_width<1, false>(p, plan.n_tiles, stream);
  } else if (per_tile) {
    launch_spans_for_width<4, true>(p, plan.n_tiles, stream);
  } else {
    launch_spans_for_width<4, false>(p, plan.n_tiles, stream);
  }
  if (plan.n_spans > 1 && !per_tile) launch_combine(p, n_rows, stream);
}

void fold_attention_spans(const AttentionShape& shape, const uint32_t* pos, uint32_t n_rows, uint32_t n_spans,
                          float* records, float* out, std::size_t out_stride, cudaStream_t stream) {
  if (n_rows == 0 || n_spans < 2) return;
  SpanParams p;
  p.s = shape;
  p.pos = pos;
  p.n_spans = n_spans;
  p.records = records;
  p.out = out;
  p.out_stride = out_stride;
  launch_combine(p, n_rows, stream);
}

}  // namespace lamina::cudaexec::detail
