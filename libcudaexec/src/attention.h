// Attention of a batch of query rows over the f16 KV cache, on tensor cores.
//
// The fixed order that makes a query's result independent of its batch,
// of how its prompt was cut into chunks and of whether it runs in prefill
// or decode:
//   - key positions are grouped into spans of kAttentionSpan positions,
//     aligned to position 0; within a span, chunks of kAttentionChunk keys
//     are taken in order with the usual running maximum (online softmax);
//   - a query whose keys lie in one span takes that span's result (O / l);
//     otherwise each span's (max, sum, O) is recorded and the spans are
//     folded left to right in one pass (attention_combine);
//   - scores and weighted values come from f16 MMAs with f32 sums, the query
//     and the weights split into a high and a low f16 part each (two MMAs),
//     so they carry about 22 bits; exp is exp2 of scores pre-scaled by
//     log2(e).
// A block computes one span (per span) or every span (per tile) for a tile
// of query rows (consecutive batch rows of one sequence, all query heads of
// one KV head); per tile, each span is folded into the output as it ends,
// with the combine's arithmetic. The rows of a tile are independent in every
// operation, and a chunk that is wholly masked for a row leaves that row's
// state unchanged bit for bit, so a row gets the same bits in any tile and
// either way, and a decode step (one span per block, split over the KV
// length) the same bits as a prefill.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ops.h"

namespace lamina::cudaexec::detail {

inline constexpr uint32_t kAttentionSpan = 256;
inline constexpr uint32_t kAttentionChunk = 64;
inline constexpr uint32_t kAttentionMaxHeadDim = 256;
static_assert(kAttentionSpan == model::kKvBlockPositions && kAttentionSpan % kAttentionChunk == 0,
              "a span is one block of the KV cache, a chunk lies in one block");
// Per-tile launches: heads up to this wide, and at least 1.5 blocks per SM
// (measured on an H100 for 512 new rows: Llama-3-8B's 256 blocks are
// 23-32% faster per tile; Qwen2's 104-114 leave SMs idle, 4-40% slower than
// split over the KV length from 512 cached positions on).
inline constexpr uint32_t kAttentionPerTileMaxHeadDim = 128;
inline constexpr std::size_t kAttentionPerTileMinBlocksPer2Sms = 3;

struct AttentionShape {
  uint32_t n_head = 0, n_head_kv = 0, head_dim_k = 0, head_dim_v = 0;
  float scale = 1.0f;
  float softcap = 0.0f;  // 0: none
  uint32_t window = 0;   // 0: every earlier position
  // Per query head, a learned logit that joins every softmax's denominator
  // and adds nothing to the output (gpt-oss's sinks; device; null: none).
  const float* sinks = nullptr;
};

// Consecutive batch rows of one sequence whose queries share their KV loads.
struct AttentionTile {
  uint32_t first_row = 0;
  uint32_t n_tokens = 0;
};

// How one launch covers its rows.
struct AttentionPlan {
  uint32_t n_tiles = 0;      // tiles (on the device) covering the rows
  uint32_t n_spans = 0;      // spans covering the latest position (more allowed: blocks past a row's keys do nothing)
  bool single_warp = false;  // one 16-row warp per block: tiles of one token, n_head / n_head_kv <= 16
  bool per_tile = false;     // every span of a tile in one block (ignored where unsupported)
};

// Why a model's attention cannot run on the GPU ("" when it can).
const char* attention_unsupported(const AttentionShape& shape);

// Spans a batch needs: those of its latest position.
inline uint32_t attention_spans(uint32_t max_pos) { return max_pos / kAttentionSpan + 1; }

// Floats of span records for n_rows rows and up to n_spans spans.
std::size_t attention_workspace_floats(const AttentionShape& shape, uint32_t n_rows, uint32_t n_spans);

// How a step of n rows is launched (seq: the rows' sequences, host; max_pos
// its latest position): its tiles, runs of consecutive rows of one sequence
// of at most 64 query rows, are written to `tiles` (host, n entries); per
// tile where that pays on sm_count SMs.
AttentionPlan plan_attention(const AttentionShape& shape, const uint32_t* seq, uint32_t n, uint32_t max_pos,
                             int sm_count, AttentionTile* tiles);

// A decode step of n one-token rows (tile i is row i) over n_spans spans.
AttentionPlan plan_decode_attention(const AttentionShape& shape, uint32_t n, uint32_t n_spans);

// out[r][head * head_dim_v + d] for n_rows query rows q[r] (stride
// q_stride, f32), each attending to positions [max(0, pos - window + 1),
// pos] of its sequence's cache at `layer`, as `plan` says. workspace holds
// attention_workspace_floats(shape, n_rows, plan.n_spans) floats.
void attention(const AttentionShape& shape, const KvView& kv, uint32_t layer, const float* q, std::size_t q_stride,
               const uint32_t* seq, const uint32_t* pos, const AttentionTile* tiles, uint32_t n_rows,
               const AttentionPlan& plan, float* workspace, float* out, std::size_t out_stride, cudaStream_t stream);

// The span records another attention kernel left (the layout attention
// uses: per row, head and span (m, l, O[head_dim_v]), scores in the log2
// domain) folded left to right into out, for the rows whose keys lie in
// more than one span; the others' outputs are left as they are.
void fold_attention_spans(const AttentionShape& shape, const uint32_t* pos, uint32_t n_rows, uint32_t n_spans,
                          float* records, float* out, std::size_t out_stride, cudaStream_t stream);

}  // namespace lamina::cudaexec::detail
