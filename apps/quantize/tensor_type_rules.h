// Which type each tensor of a model gets in a quantization mix: the choices
// llama.cpp's llama-quantize makes (which tensors stay as they are, output and
// embedding types, more bits for some attn_v / ffn_down layers in the _M and
// _S mixes, and the fallback to a 32-block type for rows that are not a
// multiple of 256), so files match what users of that tool expect.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "lamina/gguf/types.h"
#include "quant_mix.h"

namespace lamina::gguf {
class GgufFile;
}

namespace lamina::quantize {

class QuantizeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The model facts the rules look at.
struct ModelShape {
  std::string arch;        // general.architecture
  uint32_t n_layer = 0;    // <arch>.block_count
  uint32_t n_head = 0;     // <arch>.attention.head_count (of layer 0)
  uint32_t n_head_kv = 0;  // <arch>.attention.head_count_kv (of layer 0)
  uint32_t n_expert = 0;   // <arch>.expert_count
};

// Reads ModelShape from a file's metadata; absent keys read as 0 (head_count_kv
// as head_count). Per-layer arrays give their first element.
ModelShape model_shape_from(const gguf::GgufFile& file);

struct TensorSpec {
  std::string name;
  gguf::TensorType type;        // as stored now
  std::vector<uint64_t> shape;  // ne0 (row length) first
};

struct TypeRuleOptions {
  const QuantMix* mix = nullptr;
  bool pure = false;  // every quantizable tensor gets the mix's default type
  std::optional<gguf::TensorType> output_type;       // output.weight (and a tied embedding)
  std::optional<gguf::TensorType> token_embd_type;   // token_embd.weight
};

struct TypeChoice {
  gguf::TensorType type;
  // Set when the row length ruled out the type the mix asked for: the type
  // that was asked for (`type` then holds the fallback).
  std::optional<gguf::TensorType> fallback_from;
};

// The type of every tensor of `tensors` (same order). Tensors that are not
// quantized keep their type. Throws QuantizeError when an explicit type does
// not fit a tensor's row length, or a layer number cannot be read where the
// rules need it.
std::vector<TypeChoice> choose_tensor_types(const ModelShape& model,
                                            std::span<const TensorSpec> tensors,
                                            const TypeRuleOptions& options);

// llama-quantize's tensor order (tensors outside blocks first, then block by
// block, by name within each), which is also the order its layer counters
// run in. Returns indices into `names`.
std::vector<std::size_t> llama_quantize_order(std::span<const std::string> names);

}  // namespace lamina::quantize
