// gpt-oss's expert tensors as transformers stores them (unquantized), turned
// into the GGUF stacks llama.cpp's converter writes: gate_up_proj
// [E, n_embd, 2F] holds gate and up interleaved by column (gate at even
// columns) and multiplies from the right, so each becomes [E][F][n_embd];
// down_proj [E, F, n_embd] is transposed to [E][n_embd][F]; the biases
// are split the same way and stored as F32. Released checkpoints store the
// two matrices in MXFP4 instead (*_blocks [E, rows, n/32, 16] and *_scales
// [E, rows, n/32], rows by output, gate/up rows interleaved, codes in pairs
// per byte, low nibble first): their blocks become GGUF MXFP4 blocks as
// they are, the scale byte kept and the nibbles reordered to ggml's (value
// j and j + 16 in byte j).
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

#include "hf/checkpoint.h"
#include "hf/tensor_mapping.h"
#include "lamina/gguf/file.h"

namespace lamina::model::hf {

enum class GptOssExpertPart { GateUp, GateUpBias, Down, DownBias, GateUpBlocks, GateUpScales, DownBlocks, DownScales };
inline constexpr std::size_t kGptOssExpertParts = 8;

// The part an "mlp.experts.*" name holds, or nullopt.
std::optional<GptOssExpertPart> gpt_oss_expert_part(std::string_view rest);

// One layer's expert tensors (`blk` is "blk.N."; parts by GptOssExpertPart,
// null where absent: the biases and either both matrices or all four MXFP4
// parts) as the six GGUF tensors. Throws ModelError naming the tensor on a
// missing part, a dtype or a shape that does not fit n_expert and n_embd.
std::vector<gguf::TensorInfo> gpt_oss_expert_tensors(const std::string& blk, const CheckpointTensor* const* parts,
                                                     uint32_t n_expert, uint32_t n_embd, OwnedBuffers& owned);

}  // namespace lamina::model::hf
