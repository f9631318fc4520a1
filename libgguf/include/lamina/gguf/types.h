// GGUF metadata value types and the table of ggml tensor types.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "lamina/gguf/export.h"

namespace lamina::gguf {

// Metadata value type ids, as stored in the file.
enum class ValueType : uint32_t {
  UInt8 = 0,
  Int8 = 1,
  UInt16 = 2,
  Int16 = 3,
  UInt32 = 4,
  Int32 = 5,
  Float32 = 6,
  Bool = 7,
  String = 8,
  Array = 9,
  UInt64 = 10,
  Int64 = 11,
  Float64 = 12,
};

// Lower-case GGUF name of a value type ("uint32", "string", ...); "?" if unknown.
LAMINA_GGUF_API std::string_view value_type_name(ValueType type);
LAMINA_GGUF_API bool is_known_value_type(uint32_t id);

// ggml tensor type ids. Ids that ggml retired (4, 5, 31-33, 36-38) are absent
// and rejected by the reader like any other unknown id.
enum class TensorType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
};

// Storage facts of one tensor type: `block_size` elements take `type_size` bytes.
struct LAMINA_GGUF_API TensorTypeTraits {
  TensorType type;
  std::string_view name;  // ggml's name, e.g. "Q4_K", "F32"
  uint32_t block_size;
  uint32_t type_size;
};

// Traits of a type id, or nullptr when the id is unknown.
LAMINA_GGUF_API const TensorTypeTraits* tensor_type_traits(uint32_t id);
inline const TensorTypeTraits* tensor_type_traits(TensorType type) {
  return tensor_type_traits(static_cast<uint32_t>(type));
}
// Looks a type up by its ggml name (case-insensitive: "q4_k" works).
LAMINA_GGUF_API std::optional<TensorType> tensor_type_from_name(std::string_view name);
// The ggml name of a type; "?" if the id is unknown.
LAMINA_GGUF_API std::string_view tensor_type_name(TensorType type);

// Number of known tensor types, and the i-th one (for listings and tests).
LAMINA_GGUF_API std::size_t tensor_type_count();
LAMINA_GGUF_API const TensorTypeTraits& tensor_type_at(std::size_t index);

}  // namespace lamina::gguf
