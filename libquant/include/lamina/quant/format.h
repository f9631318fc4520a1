// GGUF tensor formats known to libquant and their block geometry.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "lamina/quant/export.h"

namespace lamina::quant {

// Values equal ggml's type ids, so a GGUF tensor type converts by value.
enum class QuantFormat : uint32_t {
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
  IQ4_NL = 20,
  IQ4_XS = 23,
  BF16 = 30,
  MXFP4 = 39,
};

struct LAMINA_QUANT_API FormatTraits {
  QuantFormat format;
  std::string_view name;  // ggml's spelling, e.g. "Q4_K"
  uint32_t block_elems;   // values per block (1 for F32/F16/BF16)
  uint32_t block_bytes;   // bytes per block
  // The format a row of this format is dotted against: activations are
  // converted to it before the dot product.
  QuantFormat activation;
  // False for activation-only formats (Q8_1, Q8_K) that never hold weights.
  bool is_weight_format;
};

// Every format, in ascending id order.
inline constexpr std::array<QuantFormat, 18> kAllFormats = {
    QuantFormat::F32,  QuantFormat::F16,    QuantFormat::Q4_0,   QuantFormat::Q4_1,
    QuantFormat::Q5_0, QuantFormat::Q5_1,   QuantFormat::Q8_0,   QuantFormat::Q8_1,
    QuantFormat::Q2_K, QuantFormat::Q3_K,   QuantFormat::Q4_K,   QuantFormat::Q5_K,
    QuantFormat::Q6_K, QuantFormat::Q8_K,   QuantFormat::IQ4_NL, QuantFormat::IQ4_XS,
    QuantFormat::BF16, QuantFormat::MXFP4,
};

// Traits of a format; the argument must be one of kAllFormats.
LAMINA_QUANT_API const FormatTraits& format_traits(QuantFormat format);

// The format with this ggml type id, or nullopt if libquant does not know it.
LAMINA_QUANT_API std::optional<QuantFormat> format_from_id(uint32_t id);

// The format with this ggml name ("q4_k", "Q4_K", ...), case-insensitive.
LAMINA_QUANT_API std::optional<QuantFormat> format_from_name(std::string_view name);

// Bytes of one row of n_elems values; throws std::invalid_argument if
// n_elems is not a multiple of the block size.
LAMINA_QUANT_API uint64_t row_bytes(QuantFormat format, uint64_t n_elems);

}  // namespace lamina::quant
