// Internal: the Unicode facts the tokenizers need (UTF-8 coding, character classes,
// lower case, the first code point of NFD, GPT-2's byte-to-character mapping).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lamina::model::detail {

inline constexpr char32_t kReplacementChar = 0xFFFD;

// Decodes UTF-8 (utf8::Check::Structure); every byte that does not start a complete
// sequence becomes U+FFFD and decoding resumes at the next byte.
std::vector<char32_t> decode_utf8_lossy(std::string_view text);
// `text` with each malformed byte replaced by U+FFFD (see decode_utf8_lossy).
std::string sanitize_utf8(std::string_view text);

struct CharClass {
  bool letter = false;       // L*
  bool number = false;       // N*
  bool punctuation = false;  // P*
  bool symbol = false;       // S*
  bool mark = false;         // M*
  bool nonspacing_mark = false;  // Mn
  bool control = false;      // Cc, Cf, Co, Cs (not unassigned)
  bool unassigned = false;   // Cn
  bool whitespace = false;   // the Unicode White_Space property
};
CharClass classify(char32_t cp);
bool is_whitespace(char32_t cp);
// Simple (one code point) lower-case mapping.
char32_t to_lower(char32_t cp);
// The first code point of the canonical decomposition: 'é' -> 'e'.
char32_t nfd_first(char32_t cp);

enum class NormalForm { NFC, NFD, NFKC, NFKD };
// `text` (valid UTF-8) in the given Unicode normalization form.
std::string normalize_unicode(std::string_view text, NormalForm form);

// GPT-2 byte-level BPE represents each byte by a printable character.
const std::string& byte_to_unicode(uint8_t byte);
// The byte a character stands for, or -1 when it is not one of the 256.
int unicode_to_byte(char32_t cp);

}  // namespace lamina::model::detail
