// Internal: the regex pre-tokenizers of byte-level BPE vocabularies, chosen by
// tokenizer.ggml.pre.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "tokenizer/regex.h"

namespace lamina::model::detail {

struct PreTokenizerRules {
  // Applied in order: each splits every piece so far into its matches and the text
  // between them. `\s`/`\S` mean the Unicode White_Space set (not PCRE2's own).
  std::span<const std::string_view> patterns;
  bool ignore_merges = false;  // a word that is itself a token is taken whole
  bool add_bos = false;        // default when tokenizer.ggml.add_bos_token is absent
  bool nfc = false;            // the text is put in Unicode NFC first (the model's normalizer)
};

// The rules for a tokenizer.ggml.pre value; nullptr when the name is not known.
const PreTokenizerRules* find_pre_tokenizer_rules(std::string_view pre);

class PreTokenizer {
 public:
  // Throws TokenizerError when a pattern does not compile.
  explicit PreTokenizer(const PreTokenizerRules& rules);

  // Splits valid UTF-8 `text` into words, replacing the contents of `words`.
  void split(std::string_view text, std::vector<ByteRange>& words) const;

 private:
  std::vector<std::shared_ptr<const Regex>> regexes_;
};

}  // namespace lamina::model::detail
