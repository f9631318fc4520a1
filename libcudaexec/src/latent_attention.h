// Attention of multi-head latent attention (DeepSeek V2/V3) in its absorbed
// form, as the CPU path and llama.cpp run it: every query head attends over
// one key row per position, [rotated k_pe; latent c] (head_dim_k values in
// the cache's K, f16), whose last head_dim_v values (c) are also the values.
// The cache holds kv_lora + rope values per position and layer: no V rows.
//
// The order is attention.h's: spans of kAttentionSpan positions aligned to
// position 0 with the keys of a span in chunks at fixed positions (online
// softmax), a row's spans folded left to right by fold_attention_spans. A
// block computes one row, one group of heads and one span, so a row's result
// does not depend on its batch, on how its prompt was cut into chunks or on
// whether it runs in prefill or decode. The products are f32 FMAs over the
// f16 keys (the heads are too wide, 576 and 512 values, for attention.h's
// register-resident tiles).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "attention.h"

namespace lamina::cudaexec::detail {

// Why latent attention of this shape cannot run ("" when it can): one KV
// head, head_dim_v <= head_dim_k, widths the kernel's tiles cover, no soft
// cap or sinks.
const char* latent_attention_unsupported(const AttentionShape& shape);

// out[r][head * head_dim_v + d] for n_rows query rows q[r] (stride q_stride;
// per head head_dim_k values laid out as the key rows), each attending to
// positions [max(0, pos - window + 1), pos] of its sequence at `layer`, over
// n_spans spans (attention_spans of the batch's latest position). workspace
// holds attention_workspace_floats(shape, n_rows, n_spans) floats.
void latent_attention(const AttentionShape& shape, const KvView& kv, uint32_t layer, const float* q,
                      std::size_t q_stride, const uint32_t* seq, const uint32_t* pos, uint32_t n_rows,
                      uint32_t n_spans, float* workspace, float* out, std::size_t out_stride, cudaStream_t stream);

}  // namespace lamina::cudaexec::detail
