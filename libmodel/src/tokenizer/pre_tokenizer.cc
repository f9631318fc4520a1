#include "tokenizer/pre_tokenizer.h"

namespace lamina::model::detail {

PreTokenizer::PreTokenizer(const PreTokenizerRules& rules) {
  regexes_.reserve(rules.patterns.size());
  for (std::string_view pattern : rules.patterns) {
    regexes_.push_back(std::make_shared<const Regex>(pattern, RegexDialect::LlamaCpp));
  }
}

void PreTokenizer::split(std::string_view text, std::vector<ByteRange>& words) const {
  words.clear();
  if (text.empty()) return;
  words.push_back({0, text.size()});
  std::vector<ByteRange> next;
  std::vector<MatchPiece> pieces;
  for (const auto& regex : regexes_) {
    next.clear();
    // Each piece is cut into its matches and the text between them; matching stops at
    // the piece's ends, as if the piece were the whole text.
    for (const ByteRange& range : words) {
      pieces.clear();
      split_by_matches(*regex, text.substr(range.begin, range.end - range.begin), pieces);
      for (const MatchPiece& p : pieces) next.push_back({range.begin + p.range.begin, range.begin + p.range.end});
    }
    words.swap(next);
  }
}

}  // namespace lamina::model::detail
