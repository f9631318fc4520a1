#include "jinja/text.h"

#include <utf8proc.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "jinja/value.h"
#include "utf8.h"

namespace lamina::model::jinja::text {
namespace {

// Bytes that start no valid sequence map to lone surrogates U+DC80..U+DCFF
// (Python's surrogateescape), which encode() turns back into the byte.
constexpr char32_t kEscapedByteBase = 0xDC00;

std::size_t decode_one(std::string_view s, std::size_t i, char32_t& out) {
  const std::size_t len = utf8::decode_at(s, i, out, utf8::Check::Strict);
  if (len > 0) return len;
  out = kEscapedByteBase + static_cast<unsigned char>(s[i]);
  return 1;
}

bool is_escaped_byte(char32_t c) { return c >= kEscapedByteBase + 0x80 && c <= kEscapedByteBase + 0xFF; }

char32_t map_case(char32_t c, utf8proc_int32_t (*fn)(utf8proc_int32_t)) {
  if (c < 0x80) return static_cast<char32_t>(fn(static_cast<utf8proc_int32_t>(c)));
  if (is_escaped_byte(c)) return c;
  return static_cast<char32_t>(fn(static_cast<utf8proc_int32_t>(c)));
}

utf8proc_category_t category(char32_t c) { return utf8proc_category(static_cast<utf8proc_int32_t>(c)); }

bool is_cased(char32_t c) {
  const auto cat = category(c);
  return cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL || cat == UTF8PROC_CATEGORY_LT;
}

bool is_printable(char32_t c) {
  if (c == ' ') return true;
  if (is_escaped_byte(c)) return false;
  switch (category(c)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
    case UTF8PROC_CATEGORY_ZS:
      return false;
    default:
      return true;
  }
}

std::string map_each(std::string_view s, utf8proc_int32_t (*fn)(utf8proc_int32_t)) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : decode(s)) append_utf8(out, map_case(c, fn));
  return out;
}

std::u32string strip_set(const std::optional<std::string>& chars) { return chars ? decode(*chars) : std::u32string(); }

bool in_strip_set(char32_t c, const std::optional<std::string>& chars, const std::u32string& set) {
  return chars ? set.find(c) != std::u32string::npos : is_space(c);
}

// The code point index of a byte offset.
int64_t code_point_index(std::string_view s, std::size_t byte_offset) { return length(s.substr(0, byte_offset)); }

}  // namespace

std::u32string decode(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    char32_t c = 0;
    i += decode_one(s, i, c);
    out.push_back(c);
  }
  return out;
}

void append_utf8(std::string& out, char32_t c) {
  if (is_escaped_byte(c))
    out.push_back(static_cast<char>(c - kEscapedByteBase));
  else
    utf8::append(out, c);
}

std::string encode(std::u32string_view code_points) {
  std::string out;
  out.reserve(code_points.size());
  for (char32_t c : code_points) append_utf8(out, c);
  return out;
}

bool is_ascii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

int64_t length(std::string_view s) {
  if (is_ascii(s)) return static_cast<int64_t>(s.size());
  int64_t n = 0;
  for (std::size_t i = 0; i < s.size(); ++n) {
    char32_t c = 0;
    i += decode_one(s, i, c);
  }
  return n;
}

bool is_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right) {
  const std::u32string set = strip_set(chars);
  const std::u32string cps = decode(s);
  std::size_t b = 0, e = cps.size();
  if (left)
    while (b < e && in_strip_set(cps[b], chars, set)) ++b;
  if (right)
    while (e > b && in_strip_set(cps[e - 1], chars, set)) --e;
  return encode(std::u32string_view(cps).substr(b, e - b));
}

std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit) {
  std::vector<std::string> parts;
  if (sep) {
    if (sep->empty()) throw Error("empty separator");
    std::size_t start = 0;
    while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
      const std::size_t at = s.find(*sep, start);
      if (at == std::string_view::npos) break;
      parts.emplace_back(s.substr(start, at - start));
      start = at + sep->size();
    }
    parts.emplace_back(s.substr(start));
    return parts;
  }
  const std::u32string cps = decode(s);
  std::size_t i = 0;
  while (i < cps.size()) {
    while (i < cps.size() && is_space(cps[i])) ++i;
    if (i == cps.size()) break;
    if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
      std::size_t e = cps.size();
      while (e > i && is_space(cps[e - 1])) --e;
      parts.push_back(encode(std::u32string_view(cps).substr(i, e - i)));
      break;
    }
    std::size_t j = i;
    while (j < cps.size() && !is_space(cps[j])) ++j;
    parts.push_back(encode(std::u32string_view(cps).substr(i, j - i)));
    i = j;
  }
  return parts;
}

std::vector<std::string> rsplit(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit) {
  if (maxsplit < 0) return split(s, sep, maxsplit);
  std::vector<std::string> parts;
  if (sep) {
    if (sep->empty()) throw Error("empty separator");
    std::size_t end = s.size();
    while (static_cast<int64_t>(parts.size()) < maxsplit) {
      if (end < sep->size()) break;
      const std::size_t at = s.rfind(*sep, end - sep->size());
      if (at == std::string_view::npos) break;
      parts.emplace_back(s.substr(at + sep->size(), end - at - sep->size()));
      end = at;
    }
    parts.emplace_back(s.substr(0, end));
  } else {
    const std::u32string cps = decode(s);
    std::size_t e = cps.size();
    while (true) {
      while (e > 0 && is_space(cps[e - 1])) --e;
      if (e == 0) break;
      if (static_cast<int64_t>(parts.size()) == maxsplit) {
        std::size_t b = 0;
        while (b < e && is_space(cps[b])) ++b;
        parts.push_back(encode(std::u32string_view(cps).substr(b, e - b)));
        break;
      }
      std::size_t b = e;
      while (b > 0 && !is_space(cps[b - 1])) --b;
      parts.push_back(encode(std::u32string_view(cps).substr(b, e - b)));
      e = b;
    }
  }
  std::reverse(parts.begin(), parts.end());
  return parts;
}

std::string replace(std::string_view s, std::string_view old, std::string_view with, int64_t count) {
  std::string out;
  int64_t done = 0;
  if (old.empty()) {
    // Python inserts the replacement before every character and at the end.
    const std::u32string cps = decode(s);
    for (char32_t c : cps) {
      if (count < 0 || done < count) {
        out.append(with);
        ++done;
      }
      append_utf8(out, c);
      check_string_size(out.size());
    }
    if (count < 0 || done < count) out.append(with);
    check_string_size(out.size());
    return out;
  }
  std::size_t start = 0;
  while (count < 0 || done < count) {
    const std::size_t at = s.find(old, start);
    if (at == std::string_view::npos) break;
    out.append(s.substr(start, at - start)).append(with);
    check_string_size(out.size());
    start = at + old.size();
    ++done;
  }
  out.append(s.substr(start));
  check_string_size(out.size());
  return out;
}

int64_t find(std::string_view s, std::string_view sub, bool reverse) {
  const std::size_t at = reverse ? s.rfind(sub) : s.find(sub);
  return at == std::string_view::npos ? -1 : code_point_index(s, at);
}

int64_t count(std::string_view s, std::string_view sub) {
  if (sub.empty()) return length(s) + 1;
  int64_t n = 0;
  for (std::size_t at = s.find(sub); at != std::string_view::npos; at = s.find(sub, at + sub.size())) ++n;
  return n;
}

std::string upper(std::string_view s) { return map_each(s, utf8proc_toupper); }
std::string lower(std::string_view s) { return map_each(s, utf8proc_tolower); }

std::string capitalize(std::string_view s) {
  std::u32string cps = decode(s);
  for (std::size_t i = 0; i < cps.size(); ++i) cps[i] = map_case(cps[i], i == 0 ? utf8proc_totitle : utf8proc_tolower);
  return encode(cps);
}

std::string python_title(std::string_view s) {
  std::u32string cps = decode(s);
  bool previous_cased = false;
  for (char32_t& c : cps) {
    c = map_case(c, previous_cased ? utf8proc_tolower : utf8proc_totitle);
    previous_cased = is_cased(c);
  }
  return encode(cps);
}

std::string jinja_title(std::string_view s) {
  const auto is_separator = [](char32_t c) {
    return is_space(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
  };
  std::u32string cps = decode(s);
  bool word_start = true;
  for (char32_t& c : cps) {
    if (is_separator(c)) {
      word_start = true;
      continue;
    }
    c = map_case(c, word_start ? utf8proc_toupper : utf8proc_tolower);
    word_start = false;
  }
  return encode(cps);
}

bool is_upper(std::string_view s) {
  bool any_cased = false;
  for (char32_t c : decode(s)) {
    const auto cat = category(c);
    if (cat == UTF8PROC_CATEGORY_LL || cat == UTF8PROC_CATEGORY_LT) return false;
    any_cased = any_cased || cat == UTF8PROC_CATEGORY_LU;
  }
  return any_cased;
}

bool is_lower(std::string_view s) {
  bool any_cased = false;
  for (char32_t c : decode(s)) {
    const auto cat = category(c);
    if (cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LT) return false;
    any_cased = any_cased || cat == UTF8PROC_CATEGORY_LL;
  }
  return any_cased;
}

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  const std::string_view sci(buf, static_cast<std::size_t>(r.ptr - buf));  // "-1.25e+03"
  const bool negative = sci.front() == '-';
  const std::size_t e_at = sci.find('e');
  std::string digits;
  for (char c : sci.substr(negative ? 1 : 0, e_at - (negative ? 1 : 0)))
    if (c != '.') digits.push_back(c);
  int exponent = 0;
  std::from_chars(sci.data() + e_at + (sci[e_at + 1] == '+' ? 2 : 1), sci.data() + sci.size(), exponent);
  const int n = static_cast<int>(digits.size());
  const int point = exponent + 1;  // digits before the decimal point
  std::string out = negative ? "-" : "";
  // Python's repr switches to exponent notation outside 1e-4 <= |d| < 1e16.
  if (point <= -4 || point > 16) {
    out += digits[0];
    if (n > 1) out.append(".").append(digits, 1);
    char exp[16];
    std::snprintf(exp, sizeof exp, "e%c%02d", exponent < 0 ? '-' : '+', exponent < 0 ? -exponent : exponent);
    return out + exp;
  }
  if (point <= 0) return out + "0." + std::string(static_cast<std::size_t>(-point), '0') + digits;
  if (point >= n) return out + digits + std::string(static_cast<std::size_t>(point - n), '0') + ".0";
  return out + digits.substr(0, static_cast<std::size_t>(point)) + "." + digits.substr(static_cast<std::size_t>(point));
}

std::string python_quote(std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  char esc[16];
  for (char32_t c : decode(s)) {
    if (c == static_cast<char32_t>(quote) || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (is_printable(c)) {
      append_utf8(out, c);
    } else {
      const unsigned v = static_cast<unsigned>(is_escaped_byte(c) ? c - kEscapedByteBase : c);
      if (v < 0x100) {
        std::snprintf(esc, sizeof esc, "\\x%02x", v);
      } else if (v < 0x10000) {
        std::snprintf(esc, sizeof esc, "\\u%04x", v);
      } else {
        std::snprintf(esc, sizeof esc, "\\U%08x", v);
      }
      out += esc;
    }
  }
  out.push_back(quote);
  return out;
}

std::string json_quote(std::string_view s) {
  std::string out = "\"";
  char esc[16];
  for (char c : s) {
    const auto b = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (b < 0x20) {
          std::snprintf(esc, sizeof esc, "\\u%04x", static_cast<unsigned>(b));
          out += esc;
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
  return out;
}

}  // namespace lamina::model::jinja::text
