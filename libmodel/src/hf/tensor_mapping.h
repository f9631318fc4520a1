// The checkpoint's tensors under their GGUF names, with the changes llama.cpp's
// converter makes: Llama's Q/K rows permuted from rotate-half to adjacent-pair
// RoPE order, GPT-2's Conv1D weights transposed, Gemma's zero-centred norm
// weights shifted by one, Mixtral's and DeepSeek's per-expert matrices
// stacked into one 3-D tensor each, DeepSeek's kv_b_proj split per head, 1-D tensors stored as F32, and Llama 3.1's rope_freqs added.
// Unchanged tensors stay views into the mapped files.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "hf/architecture_metadata.h"
#include "hf/checkpoint.h"
#include "lamina/gguf/file.h"

namespace lamina::model::hf {

// Buffers of the tensors that had to be changed (or copied to align them).
using OwnedBuffers = std::vector<std::unique_ptr<std::byte[]>>;

// The GGUF type of a checkpoint dtype, and one element of it as f32.
gguf::TensorType gguf_type(Dtype d);
float element_as_f32(Dtype d, const std::byte* p);

// Throws ModelError naming the tensor and file for a tensor that has no place
// in the architecture or a shape that does not fit it.
std::vector<gguf::TensorInfo> map_tensors(const Checkpoint& checkpoint, const HfArchitecture& arch,
                                          OwnedBuffers& owned);

}  // namespace lamina::model::hf
