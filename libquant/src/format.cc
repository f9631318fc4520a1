#include "lamina/quant/format.h"

#include <stdexcept>
#include <string>

#include "lamina/quant/blocks.h"

namespace lamina::quant {
namespace {

using F = QuantFormat;

constexpr FormatTraits kTraits[] = {
    {F::F32, "F32", 1, 4, F::F32, true},
    {F::F16, "F16", 1, 2, F::F16, true},
    {F::Q4_0, "Q4_0", kQK, sizeof(BlockQ4_0), F::Q8_0, true},
    {F::Q4_1, "Q4_1", kQK, sizeof(BlockQ4_1), F::Q8_1, true},
    {F::Q5_0, "Q5_0", kQK, sizeof(BlockQ5_0), F::Q8_0, true},
    {F::Q5_1, "Q5_1", kQK, sizeof(BlockQ5_1), F::Q8_1, true},
    {F::Q8_0, "Q8_0", kQK, sizeof(BlockQ8_0), F::Q8_0, true},
    {F::Q8_1, "Q8_1", kQK, sizeof(BlockQ8_1), F::Q8_1, false},
    {F::Q2_K, "Q2_K", kQK_K, sizeof(BlockQ2_K), F::Q8_K, true},
    {F::Q3_K, "Q3_K", kQK_K, sizeof(BlockQ3_K), F::Q8_K, true},
    {F::Q4_K, "Q4_K", kQK_K, sizeof(BlockQ4_K), F::Q8_K, true},
    {F::Q5_K, "Q5_K", kQK_K, sizeof(BlockQ5_K), F::Q8_K, true},
    {F::Q6_K, "Q6_K", kQK_K, sizeof(BlockQ6_K), F::Q8_K, true},
    {F::Q8_K, "Q8_K", kQK_K, sizeof(BlockQ8_K), F::Q8_K, false},
    {F::IQ4_NL, "IQ4_NL", kQK, sizeof(BlockIQ4_NL), F::Q8_0, true},
    {F::IQ4_XS, "IQ4_XS", kQK_K, sizeof(BlockIQ4_XS), F::Q8_K, true},
    {F::BF16, "BF16", 1, 2, F::BF16, true},
    {F::MXFP4, "MXFP4", kQK, sizeof(BlockMXFP4), F::Q8_0, true},
};
static_assert(std::size(kTraits) == kAllFormats.size());

constexpr bool traits_follow_format_list() {
  for (size_t i = 0; i < kAllFormats.size(); ++i) {
    if (kTraits[i].format != kAllFormats[i]) return false;
  }
  return true;
}
static_assert(traits_follow_format_list());

const FormatTraits* find_traits(QuantFormat format) {
  for (const FormatTraits& t : kTraits) {
    if (t.format == format) return &t;
  }
  return nullptr;
}

char to_upper_ascii(char c) { return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c; }

}  // namespace

const FormatTraits& format_traits(QuantFormat format) {
  const FormatTraits* t = find_traits(format);
  if (t == nullptr) {
    throw std::invalid_argument("unknown quant format id " +
                                std::to_string(static_cast<uint32_t>(format)));
  }
  return *t;
}

std::optional<QuantFormat> format_from_id(uint32_t id) {
  const FormatTraits* t = find_traits(static_cast<QuantFormat>(id));
  if (t == nullptr) return std::nullopt;
  return t->format;
}

std::optional<QuantFormat> format_from_name(std::string_view name) {
  for (const FormatTraits& t : kTraits) {
    if (t.name.size() != name.size()) continue;
    bool equal = true;
    for (size_t i = 0; i < name.size() && equal; ++i) {
      equal = to_upper_ascii(name[i]) == t.name[i];
    }
    if (equal) return t.format;
  }
  return std::nullopt;
}

uint64_t row_bytes(QuantFormat format, uint64_t n_elems) {
  const FormatTraits& t = format_traits(format);
  if (n_elems % t.block_elems != 0) {
    throw std::invalid_argument("row of " + std::to_string(n_elems) + " values is not a multiple of the " +
                                std::string(t.name) + " block size " + std::to_string(t.block_elems));
  }
  return n_elems / t.block_elems * t.block_bytes;
}

}  // namespace lamina::quant
