#include "tokenizer/pre_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <string>

#include "lamina/model/tokenizer.h"
#include "tokenizer/unicode.h"

namespace lamina::model::detail {

namespace {

// The Unicode White_Space set, the whitespace the reference tokenizers test for. PCRE2's
// own \s differs from it (U+0085), so patterns are rewritten to use this class.
constexpr std::string_view kWhitespaceItems =
    "\\t-\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}"
    "\\x{3000}";

// Replaces \s and \S by the explicit White_Space class, inside and outside brackets.
std::string expand_whitespace_escapes(std::string_view pattern) {
  std::string out;
  bool in_class = false;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char next = pattern[++i];
      if (next == 's') {
        if (in_class) {
          out += kWhitespaceItems;
        } else {
          out += '[';
          out += kWhitespaceItems;
          out += ']';
        }
      } else if (next == 'S' && !in_class) {
        out += "[^";
        out += kWhitespaceItems;
        out += ']';
      } else if (next == 'S') {
        throw TokenizerError("pre-tokenizer pattern uses \\S inside a character class: " +
                             std::string(pattern));
      } else {
        out += c;
        out += next;
      }
      continue;
    }
    if (c == '[' && !in_class) {
      in_class = true;
    } else if (c == ']' && in_class) {
      in_class = false;
    }
    out += c;
  }
  return out;
}

}  // namespace

class PreTokenizer::Regex {
 public:
  explicit Regex(std::string_view pattern) {
    const std::string expanded = expand_whitespace_escapes(pattern);
    int error = 0;
    PCRE2_SIZE error_offset = 0;
    code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(expanded.data()), expanded.size(),
                          PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY, &error, &error_offset,
                          nullptr);
    if (code_ == nullptr) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(error, message, sizeof message);
      throw TokenizerError("pre-tokenizer pattern does not compile at offset " +
                           std::to_string(error_offset) + ": " +
                           reinterpret_cast<const char*>(message) + ": " + std::string(pattern));
    }
    // Without JIT support matching still works, only slower.
    pcre2_jit_compile(code_, PCRE2_JIT_COMPLETE);
  }
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;
  ~Regex() { pcre2_code_free(code_); }

  // Splits text[range] into matches and the gaps between them; appends to `out`.
  // Matching stops at the range's ends, as if the range were the whole text.
  void split(std::string_view text, ByteRange range, pcre2_match_data* match,
             std::vector<ByteRange>& out) const {
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data() + range.begin);
    const std::size_t length = range.end - range.begin;
    std::size_t pos = 0;
    std::size_t piece_start = 0;
    while (pos < length) {
      int rc = pcre2_match(code_, subject, length, pos, PCRE2_NO_UTF_CHECK, match, nullptr);
      if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
        rc = pcre2_match(code_, subject, length, pos, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, match,
                         nullptr);
      }
      if (rc == PCRE2_ERROR_NOMATCH) break;
      if (rc < 0) {
        throw TokenizerError("pre-tokenizer regex match failed with PCRE2 error " +
                             std::to_string(rc));
      }
      const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match);
      const std::size_t begin = ovector[0];
      const std::size_t end = ovector[1];
      if (end == begin) {
        // An empty match splits nothing; step over one character.
        pos = begin + utf8_length_from_lead(static_cast<unsigned char>(subject[begin]));
        continue;
      }
      if (begin > piece_start) out.push_back({range.begin + piece_start, range.begin + begin});
      out.push_back({range.begin + begin, range.begin + end});
      piece_start = end;
      pos = end;
    }
    if (piece_start < length) out.push_back({range.begin + piece_start, range.end});
  }

  const pcre2_code* code() const { return code_; }

 private:
  pcre2_code* code_ = nullptr;
};

PreTokenizer::PreTokenizer(const PreTokenizerRules& rules) {
  regexes_.reserve(rules.patterns.size());
  for (std::string_view pattern : rules.patterns) {
    regexes_.push_back(std::make_shared<const Regex>(pattern));
  }
}

void PreTokenizer::split(std::string_view text, std::vector<ByteRange>& words) const {
  words.clear();
  if (text.empty()) return;
  words.push_back({0, text.size()});
  std::vector<ByteRange> next;
  for (const auto& regex : regexes_) {
    // One match block per call keeps concurrent encodes independent.
    pcre2_match_data* match = pcre2_match_data_create_from_pattern(regex->code(), nullptr);
    if (match == nullptr) throw std::bad_alloc();
    next.clear();
    try {
      for (const ByteRange& range : words) regex->split(text, range, match, next);
    } catch (...) {
      pcre2_match_data_free(match);
      throw;
    }
    pcre2_match_data_free(match);
    words.swap(next);
  }
}

}  // namespace lamina::model::detail
