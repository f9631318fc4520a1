// Internal: UTF-8 coding, once for the whole library (tokenizers, chat
// templates, streamed text). Two readings of malformed input exist on
// purpose, and are chosen by name: Check::Structure accepts what a lead byte
// and its continuation bytes spell (as the Hugging Face tokenizers split
// text), Check::Strict is RFC 3629 (no overlong forms, no surrogates, nothing
// past U+10FFFF), as Python decodes.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace lamina::model::utf8 {

enum class Check { Structure, Strict };

inline bool is_continuation(unsigned char b) { return (b & 0xC0) == 0x80; }

// Length of the sequence a byte starts, judged by its high bits alone: 1 for
// ASCII and for a stray continuation byte, 4 for F8..FF.
inline std::size_t length_from_lead(unsigned char lead) {
  if (lead < 0xC0) return 1;
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  return 4;
}

// Decodes the sequence at `pos` (< s.size()) into `cp`; returns its length,
// or 0 when it is malformed under `check` (cp is then unchanged).
std::size_t decode_at(std::string_view s, std::size_t pos, char32_t& cp, Check check);

// Appends the encoding of `cp` (at most U+1FFFFF; surrogates are encoded as
// they come, as Python's surrogatepass does).
void append(std::string& out, char32_t cp);

// Length of the longest prefix of `s` that does not end inside a sequence
// that later bytes could still complete (judged by its lead byte, as a stream
// is cut); stray continuation bytes have nothing to wait for.
std::size_t complete_prefix(std::string_view s);

// Offset of the first byte that starts no sequence valid under Check::Strict,
// or npos when `s` is valid UTF-8.
std::size_t first_invalid(std::string_view s);

}  // namespace lamina::model::utf8
