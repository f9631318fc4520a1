// Attention of a batch of query rows over the f16 KV cache, split over the
// key positions (flash-decoding): each (row, head, chunk of kChunk keys)
// gives a partial softmax (max, sum, weighted V), then one pass combines the
// chunks in order. Decode rows and prompt rows take the same path; the
// chunking is fixed per position, so a row's result does not depend on the
// batch or on how many chunks were launched.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "ops.h"

namespace lamina::cudaexec::detail {

inline constexpr uint32_t kAttentionChunk = 256;

struct AttentionShape {
  uint32_t n_head = 0, n_head_kv = 0, head_dim_k = 0, head_dim_v = 0;
  float scale = 1.0f;
  float softcap = 0.0f;  // 0: none
  uint32_t window = 0;   // 0: every earlier position
};

// Floats of partial-result workspace for n_rows rows and up to n_chunks chunks.
std::size_t attention_workspace_floats(const AttentionShape& shape, uint32_t n_rows, uint32_t n_chunks);

// out[r][head * head_dim_v + d] for n_rows query rows q[r] (stride q_stride),
// each attending to positions [max(0, pos - window + 1), pos] of its
// sequence's cache at `layer`. n_chunks must cover the longest row
// (ceil((max pos + 1) / kAttentionChunk)); launching more is allowed.
void attention(const AttentionShape& shape, const KvView& kv, uint32_t layer, const float* q, std::size_t q_stride,
               const uint32_t* seq, const uint32_t* pos, uint32_t n_rows, uint32_t n_chunks, float* workspace,
               float* out, std::size_t out_stride, cudaStream_t stream);

}  // namespace lamina::cudaexec::detail
