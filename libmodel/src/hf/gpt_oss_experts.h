// gpt-oss's expert tensors as transformers stores them (unquantized), turned
// into the GGUF stacks llama.cpp's converter writes: gate_up_proj
// [E, n_embd, 2F] holds gate and up interleaved by column (gate at even
// columns) and multiplies from the right, so each becomes [E][F][n_embd];
// down_proj [E, F, n_embd] is transposed to [E][n_embd][F]; the biases
// are split the same way and stored as F32.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "hf/checkpoint.h"
#include "hf/tensor_mapping.h"
#include "lamina/gguf/file.h"

namespace lamina::model::hf {

enum class GptOssExpertPart { GateUp, GateUpBias, Down, DownBias };

// The part an "mlp.experts.*" name holds, or nullopt.
std::optional<GptOssExpertPart> gpt_oss_expert_part(std::string_view rest);

// One layer's four expert tensors (all required; `blk` is "blk.N.") as the
// six GGUF tensors. Throws ModelError naming the tensor on a missing part or
// a shape that does not fit n_expert and n_embd.
std::vector<gguf::TensorInfo> gpt_oss_expert_tensors(const std::string& blk, const CheckpointTensor* const parts[4],
                                                     uint32_t n_expert, uint32_t n_embd, OwnedBuffers& owned);

}  // namespace lamina::model::hf
