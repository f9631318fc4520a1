// Internal: the regular expressions of tokenizers (pre-tokenizer splits, Replace
// normalizers and decoders), run by PCRE2 in UTF mode with Unicode properties and
// JIT-compiled. Patterns are written for Oniguruma (Hugging Face tokenizers) or for
// llama.cpp's std::regex rules; each dialect's meaning of \s, \w, \h and $ is
// rewritten into PCRE2's.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

typedef struct pcre2_real_code_8 pcre2_code_8;

namespace lamina::model::detail {

struct ByteRange {
  std::size_t begin = 0;
  std::size_t end = 0;
};

enum class RegexDialect {
  // Hugging Face tokenizer.json: Oniguruma's Ruby syntax (\w is letters, marks,
  // numbers and connector punctuation; \h a hex digit; ^ and $ match at line ends).
  Oniguruma,
  // llama.cpp's per-pre-tokenizer rules: $ only at the very end.
  LlamaCpp,
  // Rust's regex crate (the Whitespace pre-tokenizer's): \w is alphabetic, marks,
  // decimal digits, connector punctuation and the joiners; $ only at the very end.
  RustRegex,
  // A literal string (Split and Replace with a "String" pattern).
  Literal,
};

class Regex {
 public:
  // Throws TokenizerError naming the pattern when it does not compile.
  Regex(std::string_view pattern, RegexDialect dialect);
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;
  ~Regex();

  // Appends the non-empty, non-overlapping matches in valid UTF-8 `text`, left to
  // right (after an empty match the search resumes one character further).
  void find_all(std::string_view text, std::vector<ByteRange>& out) const;

  const std::string& pattern() const { return pattern_; }

 private:
  std::string pattern_;
  pcre2_code_8* code_ = nullptr;
};

// `text` with every match of `regex` replaced by `content`.
std::string replace_all(const Regex& regex, std::string_view text, std::string_view content);

// The non-empty pieces of `range` (or of the whole text) that `regex` matches, and
// the gaps between them, in order; `is_match` says which is which.
struct MatchPiece {
  ByteRange range;
  bool is_match = false;
};
void split_by_matches(const Regex& regex, std::string_view text, std::vector<MatchPiece>& out);

}  // namespace lamina::model::detail
