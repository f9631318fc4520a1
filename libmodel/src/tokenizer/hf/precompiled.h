// Internal: SentencePiece's precompiled normalization map (the Precompiled normalizer's
// precompiled_charsmap): a Darts double-array trie over UTF-8 keys whose values point
// into a blob of NUL-terminated replacement strings.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lamina::model::detail::hf {

class PrecompiledCharsMap {
 public:
  // `base64`: the map as tokenizer.json stores it. Throws TokenizerError when malformed.
  explicit PrecompiledCharsMap(std::string_view base64);

  // Replaces each grapheme shorter than 6 bytes that has an entry, else each character
  // that has one, by its replacement.
  std::string normalize(std::string_view text) const;

 private:
  // The replacement of the shortest key that prefixes `chunk`, if any.
  bool transform(std::string_view chunk, std::string_view& replacement) const;

  std::vector<uint32_t> units_;
  std::string normalized_;
};

}  // namespace lamina::model::detail::hf
