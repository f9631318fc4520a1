#include "tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <memory>
#include <new>

#include "lamina/model/tokenizer.h"
#include "tokenizer/unicode.h"
#include "utf8.h"

namespace lamina::model::detail {

namespace {

// The Unicode White_Space set: what Oniguruma's \s matches and what llama.cpp's rules
// mean by it. PCRE2's own \s leaves out U+0085 and a few others.
constexpr std::string_view kWhitespaceItems =
    "\\t-\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}"
    "\\x{3000}";
// Oniguruma's Unicode \w and \h.
constexpr std::string_view kWordItems = "\\p{L}\\p{M}\\p{N}\\p{Pc}";
constexpr std::string_view kHexItems = "0-9A-Fa-f";
// Rust's regex crate's Unicode \w (Unicode TR18's word characters).
constexpr std::string_view kRustWordItems = "\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\x{200C}\\x{200D}";

struct ClassEscape {
  char letter;
  std::string_view items;
};

// Rewrites the escapes whose meaning differs between the dialect and PCRE2 into
// explicit classes, inside and outside brackets. A negated one inside a bracket
// cannot be spelled there and is refused.
std::string translate(std::string_view pattern, RegexDialect dialect) {
  std::vector<ClassEscape> escapes = {{'s', kWhitespaceItems}};
  if (dialect == RegexDialect::Oniguruma) {
    escapes.push_back({'w', kWordItems});
    escapes.push_back({'h', kHexItems});
  } else if (dialect == RegexDialect::RustRegex) {
    escapes.push_back({'w', kRustWordItems});
  }
  std::string out;
  int class_depth = 0;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char next = pattern[++i];
      bool done = false;
      for (const ClassEscape& e : escapes) {
        const bool negated = next == e.letter - 'a' + 'A';
        if (next != e.letter && !negated) continue;
        if (negated && class_depth > 0) {
          throw TokenizerError("regex uses \\" + std::string(1, next) +
                               " inside a character class, which PCRE2 cannot express: " +
                               std::string(pattern));
        }
        out += class_depth > 0 ? "" : negated ? "[^" : "[";
        out += e.items;
        if (class_depth == 0) out += ']';
        done = true;
        break;
      }
      if (!done) {
        out += c;
        out += next;
      }
      continue;
    }
    if (c == '[') {
      ++class_depth;
      out += c;
      // A ']' right after '[' or '[^' is a literal member.
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
      if (i + 1 < pattern.size() && pattern[i + 1] == ']') out += pattern[++i];
      continue;
    }
    if (c == ']' && class_depth > 0) --class_depth;
    out += c;
  }
  return out;
}

struct MatchDataFree {
  void operator()(pcre2_match_data* m) const { pcre2_match_data_free(m); }
};

}  // namespace

Regex::Regex(std::string_view pattern, RegexDialect dialect) : pattern_(pattern) {
  // Decoders may run on raw bytes (a byte token's piece): invalid UTF-8 in the subject
  // then never matches, rather than being undefined.
  uint32_t options = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF;
  std::string source;
  if (dialect != RegexDialect::Literal) options |= PCRE2_UCP;
  switch (dialect) {
    case RegexDialect::Literal:
      options |= PCRE2_LITERAL;
      source = pattern;
      break;
    case RegexDialect::Oniguruma:
      options |= PCRE2_MULTILINE;
      source = translate(pattern, dialect);
      break;
    case RegexDialect::LlamaCpp:
    case RegexDialect::RustRegex:
      options |= PCRE2_DOLLAR_ENDONLY;
      source = translate(pattern, dialect);
      break;
  }
  int error = 0;
  PCRE2_SIZE error_offset = 0;
  code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(source.data()), source.size(), options, &error,
                        &error_offset, nullptr);
  if (code_ == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof message);
    throw TokenizerError("regex does not compile at offset " + std::to_string(error_offset) + ": " +
                         reinterpret_cast<const char*>(message) + ": " + std::string(pattern));
  }
  // Without JIT support matching still works, only slower.
  pcre2_jit_compile(code_, PCRE2_JIT_COMPLETE);
}

Regex::~Regex() { pcre2_code_free(code_); }

void Regex::find_all(std::string_view text, std::vector<ByteRange>& out) const {
  // One match block per call keeps concurrent callers independent.
  const std::unique_ptr<pcre2_match_data, MatchDataFree> match(
      pcre2_match_data_create_from_pattern(code_, nullptr));
  if (!match) throw std::bad_alloc();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  std::size_t pos = 0;
  while (pos <= text.size()) {
    int rc = pcre2_match(code_, subject, text.size(), pos, 0, match.get(), nullptr);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
      rc = pcre2_match(code_, subject, text.size(), pos, PCRE2_NO_JIT, match.get(), nullptr);
    }
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(rc, message, sizeof message);
      throw TokenizerError(std::string("regex match failed: ") +
                           reinterpret_cast<const char*>(message) + ": " + pattern_);
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match.get());
    const std::size_t begin = ovector[0];
    const std::size_t end = ovector[1];
    if (end == begin) {
      if (begin >= text.size()) break;
      pos = std::min(text.size(), begin + utf8::length_from_lead(static_cast<unsigned char>(text[begin])));
      continue;
    }
    out.push_back({begin, end});
    pos = end;
  }
}

std::string replace_all(const Regex& regex, std::string_view text, std::string_view content) {
  std::vector<ByteRange> matches;
  regex.find_all(text, matches);
  std::string out;
  out.reserve(text.size());
  std::size_t pos = 0;
  for (const ByteRange& m : matches) {
    out.append(text.substr(pos, m.begin - pos));
    out.append(content);
    pos = m.end;
  }
  out.append(text.substr(pos));
  return out;
}

void split_by_matches(const Regex& regex, std::string_view text, std::vector<MatchPiece>& out) {
  std::vector<ByteRange> matches;
  regex.find_all(text, matches);
  std::size_t pos = 0;
  for (const ByteRange& m : matches) {
    if (m.begin > pos) out.push_back({{pos, m.begin}, false});
    out.push_back({m, true});
    pos = m.end;
  }
  if (pos < text.size()) out.push_back({{pos, text.size()}, false});
}

}  // namespace lamina::model::detail
