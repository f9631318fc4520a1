#include "tokenizer/hf/precompiled.h"

#include <utf8proc.h>

#include <cstring>

#include "lamina/model/tokenizer.h"
#include "tokenizer/unicode.h"
#include "utf8.h"

namespace lamina::model::detail::hf {

namespace {

[[noreturn]] void malformed(const std::string& what) {
  throw TokenizerError("tokenizer.json normalizer Precompiled: precompiled_charsmap " + what);
}

std::string decode_base64(std::string_view text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  uint32_t bits = 0;
  int n_bits = 0;
  for (char c : text) {
    if (c == '=') break;
    const int v = value(c);
    if (v < 0) malformed("is not base64");
    bits = (bits << 6) | static_cast<uint32_t>(v);
    n_bits += 6;
    if (n_bits >= 8) {
      n_bits -= 8;
      out += static_cast<char>((bits >> n_bits) & 0xFF);
    }
  }
  return out;
}

// The fields of a Darts double-array unit.
bool has_leaf(uint32_t unit) { return ((unit >> 8) & 1) == 1; }
uint32_t value_of(uint32_t unit) { return unit & ((1u << 31) - 1); }
uint32_t label_of(uint32_t unit) { return unit & ((1u << 31) | 0xFF); }
std::size_t offset_of(uint32_t unit) { return (unit >> 10) << ((unit & (1u << 9)) >> 6); }

}  // namespace

PrecompiledCharsMap::PrecompiledCharsMap(std::string_view base64) {
  const std::string bytes = decode_base64(base64);
  if (bytes.size() < 4) malformed("is too short");
  uint32_t trie_bytes = 0;
  for (int i = 3; i >= 0; --i) trie_bytes = (trie_bytes << 8) | static_cast<unsigned char>(bytes[static_cast<std::size_t>(i)]);
  if (trie_bytes % 4 != 0 || trie_bytes > bytes.size() - 4 || trie_bytes == 0) malformed("has a bad trie size");
  units_.resize(trie_bytes / 4);
  for (std::size_t u = 0; u < units_.size(); ++u) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(bytes[4 + u * 4 + static_cast<std::size_t>(i)]);
    units_[u] = v;
  }
  normalized_ = bytes.substr(4 + trie_bytes);
}

bool PrecompiledCharsMap::transform(std::string_view chunk, std::string_view& replacement) const {
  std::size_t node = offset_of(units_[0]);
  for (char ch : chunk) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == 0) return false;
    node ^= c;
    if (node >= units_.size()) return false;
    const uint32_t unit = units_[node];
    if (label_of(unit) != c) return false;
    node ^= offset_of(unit);
    if (node >= units_.size()) return false;
    if (has_leaf(unit)) {
      const std::size_t begin = value_of(units_[node]);
      if (begin >= normalized_.size()) return false;
      const std::size_t end = normalized_.find('\0', begin);
      replacement = std::string_view(normalized_).substr(begin, (end == std::string::npos ? normalized_.size() : end) - begin);
      return true;
    }
  }
  return false;
}

std::string PrecompiledCharsMap::normalize(std::string_view text) const {
  std::string out;
  out.reserve(text.size());
  const std::vector<char32_t> cps = decode_utf8_lossy(text);
  std::vector<std::size_t> starts;  // byte offset of each code point
  starts.reserve(cps.size() + 1);
  std::string encoded;
  for (char32_t cp : cps) {
    starts.push_back(encoded.size());
    utf8::append(encoded, cp);
  }
  starts.push_back(encoded.size());
  std::size_t first = 0;
  utf8proc_int32_t state = 0;
  for (std::size_t i = 1; i <= cps.size(); ++i) {
    const bool boundary = i == cps.size() ||
                          utf8proc_grapheme_break_stateful(static_cast<utf8proc_int32_t>(cps[i - 1]),
                                                           static_cast<utf8proc_int32_t>(cps[i]), &state);
    if (!boundary) continue;
    const std::string_view grapheme = std::string_view(encoded).substr(starts[first], starts[i] - starts[first]);
    std::string_view replacement;
    if (grapheme.size() < 6 && transform(grapheme, replacement)) {
      out += replacement;
    } else {
      for (std::size_t k = first; k < i; ++k) {
        const std::string_view part = std::string_view(encoded).substr(starts[k], starts[k + 1] - starts[k]);
        out += transform(part, replacement) ? replacement : part;
      }
    }
    first = i;
  }
  return out;
}

}  // namespace lamina::model::detail::hf
