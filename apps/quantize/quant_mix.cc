#include "quant_mix.h"

#include <array>

namespace lamina::quantize {
namespace {

using gguf::TensorType;

constexpr std::array kMixes = {
    QuantMix{"Q4_0", FileType::Q4_0, TensorType::Q4_0},
    QuantMix{"Q4_1", FileType::Q4_1, TensorType::Q4_1},
    QuantMix{"Q5_0", FileType::Q5_0, TensorType::Q5_0},
    QuantMix{"Q5_1", FileType::Q5_1, TensorType::Q5_1},
    QuantMix{"Q8_0", FileType::Q8_0, TensorType::Q8_0},
    QuantMix{"Q2_K", FileType::Q2_K, TensorType::Q2_K},
    QuantMix{"Q3_K_S", FileType::Q3_K_S, TensorType::Q3_K},
    QuantMix{"Q3_K_M", FileType::Q3_K_M, TensorType::Q3_K},
    QuantMix{"Q3_K_L", FileType::Q3_K_L, TensorType::Q3_K},
    QuantMix{"Q4_K_S", FileType::Q4_K_S, TensorType::Q4_K},
    QuantMix{"Q4_K_M", FileType::Q4_K_M, TensorType::Q4_K},
    QuantMix{"Q5_K_S", FileType::Q5_K_S, TensorType::Q5_K},
    QuantMix{"Q5_K_M", FileType::Q5_K_M, TensorType::Q5_K},
    QuantMix{"Q6_K", FileType::Q6_K, TensorType::Q6_K},
    QuantMix{"IQ4_NL", FileType::IQ4_NL, TensorType::IQ4_NL},
    QuantMix{"IQ4_XS", FileType::IQ4_XS, TensorType::IQ4_XS},
    QuantMix{"MXFP4_MOE", FileType::MXFP4_MOE, TensorType::Q8_0},
    QuantMix{"F16", FileType::MostlyF16, TensorType::F16},
    QuantMix{"BF16", FileType::MostlyBF16, TensorType::BF16},
    QuantMix{"F32", FileType::AllF32, TensorType::F32},
};

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto upper = [](char c) { return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 32) : c; };
    if (upper(a[i]) != upper(b[i])) return false;
  }
  return true;
}

}  // namespace

std::span<const QuantMix> all_mixes() { return kMixes; }

std::string mix_names() {
  std::string list;
  for (const QuantMix& mix : all_mixes()) {
    if (!list.empty()) list += ", ";
    list += mix.name;
  }
  return list;
}

const QuantMix* find_mix(std::string_view name) {
  for (const QuantMix& mix : kMixes) {
    if (equal_ignoring_case(mix.name, name)) return &mix;
  }
  return nullptr;
}

bool is_block_quantized(gguf::TensorType type) {
  const gguf::TensorTypeTraits* traits = gguf::tensor_type_traits(type);
  return traits != nullptr && traits->block_size > 1;
}

}  // namespace lamina::quantize
