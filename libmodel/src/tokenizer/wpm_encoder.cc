#include <algorithm>

#include "tokenizer/encoders.h"
#include "tokenizer/unicode.h"
#include "utf8.h"

namespace lamina::model::detail {

namespace {

// The CJK ideograph blocks BERT splits into single-character words (with the upper end
// of Extension E as BERT's code has it).
bool is_cjk_ideograph(char32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

// BERT's basic tokenizer: normalise, then words are runs between whitespace, with each
// punctuation mark, ASCII symbol and CJK ideograph a word of its own.
std::vector<std::string> split_words(const Vocabulary& vocab, std::string_view text) {
  std::vector<std::string> words(1);
  for (char32_t cp : decode_utf8_lossy(text)) {
    if (vocab.strip_accents) cp = nfd_first(cp);
    const CharClass c = classify(cp);
    if (c.whitespace) {
      if (!words.back().empty()) words.emplace_back();
      continue;
    }
    if (cp == 0 || cp == kReplacementChar || c.control) continue;
    if (vocab.strip_accents && c.mark) continue;
    if (vocab.lowercase) cp = to_lower(cp);
    if (c.punctuation || (cp < 0x7F && c.symbol) || is_cjk_ideograph(cp)) {
      if (!words.back().empty()) words.emplace_back();
      utf8::append(words.back(), cp);
      words.emplace_back();
    } else {
      utf8::append(words.back(), cp);
    }
  }
  if (words.back().empty()) words.pop_back();
  return words;
}

}  // namespace

void encode_wordpiece(const Vocabulary& vocab, std::string_view text, std::vector<int32_t>& out) {
  // The vocabulary marks word starts with '▁' (and continuations with nothing) instead
  // of BERT's '##' on continuations.
  static constexpr std::string_view kWordStart = "\xE2\x96\x81";
  std::string word;
  for (const std::string& w : split_words(vocab, text)) {
    word.assign(kWordStart);
    word += w;
    const std::size_t first = out.size();
    for (std::size_t i = 0; i < word.size();) {
      std::size_t end = std::min(word.size(), i + vocab.max_token_bytes);
      int32_t id = -1;
      for (; end > i; --end) {
        id = vocab.find(std::string_view(word).substr(i, end - i));
        if (id >= 0) break;
      }
      if (id < 0) {
        // A word that cannot be spelled entirely becomes one unknown token.
        out.resize(first);
        break;
      }
      out.push_back(id);
      i = end;
    }
    if (out.size() == first) {
      if (vocab.ids.unk < 0) {
        throw TokenizerError("a word cannot be spelled with the vocabulary, and it has no "
                             "unknown token");
      }
      out.push_back(vocab.ids.unk);
    }
  }
}

}  // namespace lamina::model::detail
