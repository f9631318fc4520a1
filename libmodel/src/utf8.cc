#include "utf8.h"

namespace lamina::model::utf8 {

std::size_t decode_at(std::string_view s, std::size_t pos, char32_t& cp, Check check) {
  const auto b0 = static_cast<unsigned char>(s[pos]);
  if (b0 < 0x80) {
    cp = b0;
    return 1;
  }
  // 0x80..0xBF continue a sequence and F8..FF start none.
  if (b0 < 0xC0 || b0 >= 0xF8) return 0;
  const std::size_t len = length_from_lead(b0);
  if (s.size() - pos < len) return 0;
  char32_t value = b0 & (0x7Fu >> len);
  for (std::size_t k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[pos + k]);
    if (!is_continuation(b)) return 0;
    value = (value << 6) | (b & 0x3Fu);
  }
  if (check == Check::Strict) {
    static constexpr char32_t kMinForLength[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (value < kMinForLength[len] || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) return 0;
  }
  cp = value;
  return len;
}

void append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | ((cp >> 18) & 0x07)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::size_t complete_prefix(std::string_view s) {
  // A sequence is at most 4 bytes: its lead is among the last 4.
  for (std::size_t back = 1; back <= 4 && back <= s.size(); ++back) {
    const auto b = static_cast<unsigned char>(s[s.size() - back]);
    if (is_continuation(b)) continue;
    if (b < 0x80 || b >= 0xF8) return s.size();  // ASCII, or a byte that starts nothing
    return length_from_lead(b) > back ? s.size() - back : s.size();
  }
  return s.size();
}

std::size_t first_invalid(std::string_view s) {
  char32_t cp = 0;
  for (std::size_t pos = 0; pos < s.size();) {
    const std::size_t n = decode_at(s, pos, cp, Check::Strict);
    if (n == 0) return pos;
    pos += n;
  }
  return std::string_view::npos;
}

}  // namespace lamina::model::utf8
