#include "lamina/gguf/types.h"

#include <array>
#include <cctype>

namespace lamina::gguf {
namespace {

// Storage facts of every ggml type the reader knows (ggml's type_traits).
constexpr std::array<TensorTypeTraits, 32> kTensorTypes{{
    {TensorType::F32, "F32", 1, 4},
    {TensorType::F16, "F16", 1, 2},
    {TensorType::Q4_0, "Q4_0", 32, 18},
    {TensorType::Q4_1, "Q4_1", 32, 20},
    {TensorType::Q5_0, "Q5_0", 32, 22},
    {TensorType::Q5_1, "Q5_1", 32, 24},
    {TensorType::Q8_0, "Q8_0", 32, 34},
    {TensorType::Q8_1, "Q8_1", 32, 36},
    {TensorType::Q2_K, "Q2_K", 256, 84},
    {TensorType::Q3_K, "Q3_K", 256, 110},
    {TensorType::Q4_K, "Q4_K", 256, 144},
    {TensorType::Q5_K, "Q5_K", 256, 176},
    {TensorType::Q6_K, "Q6_K", 256, 210},
    {TensorType::Q8_K, "Q8_K", 256, 292},
    {TensorType::IQ2_XXS, "IQ2_XXS", 256, 66},
    {TensorType::IQ2_XS, "IQ2_XS", 256, 74},
    {TensorType::IQ3_XXS, "IQ3_XXS", 256, 98},
    {TensorType::IQ1_S, "IQ1_S", 256, 50},
    {TensorType::IQ4_NL, "IQ4_NL", 32, 18},
    {TensorType::IQ3_S, "IQ3_S", 256, 110},
    {TensorType::IQ2_S, "IQ2_S", 256, 82},
    {TensorType::IQ4_XS, "IQ4_XS", 256, 136},
    {TensorType::I8, "I8", 1, 1},
    {TensorType::I16, "I16", 1, 2},
    {TensorType::I32, "I32", 1, 4},
    {TensorType::I64, "I64", 1, 8},
    {TensorType::F64, "F64", 1, 8},
    {TensorType::IQ1_M, "IQ1_M", 256, 56},
    {TensorType::BF16, "BF16", 1, 2},
    {TensorType::TQ1_0, "TQ1_0", 256, 54},
    {TensorType::TQ2_0, "TQ2_0", 256, 66},
    {TensorType::MXFP4, "MXFP4", 32, 17},
}};

constexpr std::array<std::string_view, 13> kValueTypeNames{
    "uint8", "int8",   "uint16", "int16", "uint32", "int32",   "float32",
    "bool",  "string", "array",  "uint64", "int64", "float64",
};

bool equal_ignore_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::toupper(static_cast<unsigned char>(a[i])) !=
        std::toupper(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

}  // namespace

std::string_view value_type_name(ValueType type) {
  const auto id = static_cast<uint32_t>(type);
  return id < kValueTypeNames.size() ? kValueTypeNames[id] : std::string_view("?");
}

bool is_known_value_type(uint32_t id) { return id < kValueTypeNames.size(); }

const TensorTypeTraits* tensor_type_traits(uint32_t id) {
  for (const auto& t : kTensorTypes) {
    if (static_cast<uint32_t>(t.type) == id) return &t;
  }
  return nullptr;
}

std::optional<TensorType> tensor_type_from_name(std::string_view name) {
  for (const auto& t : kTensorTypes) {
    if (equal_ignore_case(t.name, name)) return t.type;
  }
  return std::nullopt;
}

std::string_view tensor_type_name(TensorType type) {
  const auto* t = tensor_type_traits(type);
  return t ? t->name : std::string_view("?");
}

std::size_t tensor_type_count() { return kTensorTypes.size(); }
const TensorTypeTraits& tensor_type_at(std::size_t index) { return kTensorTypes.at(index); }

}  // namespace lamina::gguf
