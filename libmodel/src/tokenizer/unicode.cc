#include "tokenizer/unicode.h"

#include "utf8.h"

#include <utf8proc.h>

#include <array>
#include <cstdlib>

namespace lamina::model::detail {

namespace {

struct ByteMapping {
  std::array<std::string, 256> to_unicode;
  std::array<int16_t, 512> to_byte{};  // indexed by code point; every mapped one is < 512
};

// GPT-2's bytes_to_unicode: printable Latin-1 bytes map to themselves, the other 68
// bytes to U+0100 onwards in byte order.
ByteMapping make_byte_mapping() {
  ByteMapping m;
  m.to_byte.fill(-1);
  auto keeps_itself = [](int b) {
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
  };
  char32_t next = 0x100;
  for (int b = 0; b < 256; ++b) {
    const char32_t cp = keeps_itself(b) ? static_cast<char32_t>(b) : next++;
    utf8::append(m.to_unicode[b], cp);
    m.to_byte[cp] = static_cast<int16_t>(b);
  }
  return m;
}

const ByteMapping& byte_mapping() {
  static const ByteMapping mapping = make_byte_mapping();
  return mapping;
}

}  // namespace

std::vector<char32_t> decode_utf8_lossy(std::string_view text) {
  std::vector<char32_t> out;
  out.reserve(text.size());
  std::size_t pos = 0;
  while (pos < text.size()) {
    char32_t cp = 0;
    const std::size_t n = utf8::decode_at(text, pos, cp, utf8::Check::Structure);
    if (n == 0) {
      out.push_back(kReplacementChar);
      ++pos;
    } else {
      out.push_back(cp);
      pos += n;
    }
  }
  return out;
}

std::string sanitize_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t pos = 0;
  while (pos < text.size()) {
    char32_t cp = 0;
    const std::size_t n = utf8::decode_at(text, pos, cp, utf8::Check::Structure);
    if (n == 0) {
      utf8::append(out, kReplacementChar);
      ++pos;
    } else {
      out.append(text.substr(pos, n));
      pos += n;
    }
  }
  return out;
}

bool is_whitespace(char32_t cp) {
  if (cp <= 0x20) return cp == 0x20 || (cp >= 0x09 && cp <= 0x0D);
  if (cp < 0x85) return false;
  return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
         cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

CharClass classify(char32_t cp) {
  CharClass c;
  c.whitespace = is_whitespace(cp);
  if (cp > 0x10FFFF) return c;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
      c.letter = true;
      break;
    case UTF8PROC_CATEGORY_MN:
      c.nonspacing_mark = true;
      c.mark = true;
      break;
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
      c.mark = true;
      break;
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
      c.number = true;
      break;
    case UTF8PROC_CATEGORY_PC:
    case UTF8PROC_CATEGORY_PD:
    case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI:
    case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO:
      c.punctuation = true;
      break;
    case UTF8PROC_CATEGORY_SM:
    case UTF8PROC_CATEGORY_SC:
    case UTF8PROC_CATEGORY_SK:
    case UTF8PROC_CATEGORY_SO:
      c.symbol = true;
      break;
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
      c.control = true;
      break;
    case UTF8PROC_CATEGORY_CN:
      c.unassigned = true;
      break;
    default:
      break;
  }
  return c;
}

char32_t to_lower(char32_t cp) {
  if (cp > 0x10FFFF) return cp;
  return static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp)));
}

char32_t nfd_first(char32_t cp) {
  if (cp < 0xC0 || cp > 0x10FFFF) return cp;
  // A canonical decomposition is at most 4 code points long.
  utf8proc_int32_t buffer[8];
  int last_boundclass = 0;
  const utf8proc_ssize_t n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(cp), buffer, 8,
                                                     UTF8PROC_DECOMPOSE, &last_boundclass);
  return n >= 1 ? static_cast<char32_t>(buffer[0]) : cp;
}

std::string normalize_unicode(std::string_view text, NormalForm form) {
  int options = UTF8PROC_STABLE;
  switch (form) {
    case NormalForm::NFC: options |= UTF8PROC_COMPOSE; break;
    case NormalForm::NFD: options |= UTF8PROC_DECOMPOSE; break;
    case NormalForm::NFKC: options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT; break;
    case NormalForm::NFKD: options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT; break;
  }
  utf8proc_uint8_t* mapped = nullptr;
  const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                                          static_cast<utf8proc_ssize_t>(text.size()), &mapped,
                                          static_cast<utf8proc_option_t>(options));
  if (n < 0) return std::string(text);  // not valid UTF-8: left as it is
  std::string out(reinterpret_cast<const char*>(mapped), static_cast<std::size_t>(n));
  std::free(mapped);
  return out;
}

const std::string& byte_to_unicode(uint8_t byte) { return byte_mapping().to_unicode[byte]; }

int unicode_to_byte(char32_t cp) {
  return cp < byte_mapping().to_byte.size() ? byte_mapping().to_byte[cp] : -1;
}

}  // namespace lamina::model::detail
