// The targets lamina-quantize offers: llama.cpp's file types ("Q4_K_M"), each
// a default tensor type plus the per-tensor rules of tensor_type_rules.h.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "lamina/gguf/types.h"

namespace lamina::quantize {

// llama.cpp's llama_ftype values, stored as general.file_type. Only the file
// types this tool can produce are listed.
enum class FileType : uint32_t {
  AllF32 = 0,
  MostlyF16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q8_0 = 7,
  Q5_0 = 8,
  Q5_1 = 9,
  Q2_K = 10,
  Q3_K_S = 11,
  Q3_K_M = 12,
  Q3_K_L = 13,
  Q4_K_S = 14,
  Q4_K_M = 15,
  Q5_K_S = 16,
  Q5_K_M = 17,
  Q6_K = 18,
  IQ4_NL = 25,
  IQ4_XS = 30,
  MostlyBF16 = 32,
  MXFP4_MOE = 38,
};

struct QuantMix {
  std::string_view name;  // as users type it: "Q4_K_M", "F16"
  FileType file_type;
  gguf::TensorType default_type;  // what a 2-D weight gets unless a rule says otherwise
};

// Every mix, in the order `--help` lists them.
std::span<const QuantMix> all_mixes();

// "F32, F16, ..., IQ4_XS": every mix's name, for help texts and errors.
std::string mix_names();

// The mix called `name` (case-insensitive), or nullptr.
const QuantMix* find_mix(std::string_view name);

// True for the block-quantized tensor types (not F32/F16/BF16).
bool is_block_quantized(gguf::TensorType type);

}  // namespace lamina::quantize
