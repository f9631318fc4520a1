#include "tokenizer/hf/added_tokens.h"

#include "tokenizer/unicode.h"
#include "utf8.h"

namespace lamina::model::detail::hf {

namespace {

// The code point that ends (or starts) `text`.
std::optional<char32_t> last_char(std::string_view text) {
  if (text.empty()) return std::nullopt;
  std::size_t begin = text.size() - 1;
  while (begin > 0 && text.size() - begin < 4 && utf8::is_continuation(static_cast<unsigned char>(text[begin]))) --begin;
  const std::vector<char32_t> cps = decode_utf8_lossy(text.substr(begin));
  return cps.empty() ? std::nullopt : std::optional<char32_t>(cps.back());
}
std::optional<char32_t> first_char(std::string_view text) {
  if (text.empty()) return std::nullopt;
  const std::vector<char32_t> cps = decode_utf8_lossy(text.substr(0, utf8::length_from_lead(static_cast<unsigned char>(text[0]))));
  return cps.empty() ? std::nullopt : std::optional<char32_t>(cps.front());
}

bool is_word_char(std::optional<char32_t> cp) {
  if (!cp) return false;
  const CharClass c = classify(*cp);
  return c.letter || c.number || *cp == '_';
}

// Where the whitespace that ends `text` begins, and where the whitespace that starts
// it ends.
std::size_t trailing_space_start(std::string_view text) {
  std::size_t pos = text.size();
  while (pos > 0) {
    std::size_t begin = pos - 1;
    while (begin > 0 && utf8::is_continuation(static_cast<unsigned char>(text[begin]))) --begin;
    const std::vector<char32_t> cps = decode_utf8_lossy(text.substr(begin, pos - begin));
    if (cps.size() != 1 || !is_whitespace(cps[0])) break;
    pos = begin;
  }
  return pos;
}
std::size_t leading_space_end(std::string_view text) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t n = std::min(utf8::length_from_lead(static_cast<unsigned char>(text[pos])), text.size() - pos);
    const std::vector<char32_t> cps = decode_utf8_lossy(text.substr(pos, n));
    if (cps.size() != 1 || !is_whitespace(cps[0])) break;
    pos += n;
  }
  return pos;
}

}  // namespace

AddedVocabulary::AddedVocabulary(std::vector<AddedToken> tokens) : tokens_(std::move(tokens)) {
  node_token_.push_back(-1);
  for (std::size_t i = 0; i < tokens_.size(); ++i) {
    by_id_.emplace(tokens_[i].id, i);
    if (tokens_[i].content.empty()) continue;
    int32_t node = 0;
    for (char c : tokens_[i].content) {
      const uint64_t key = (uint64_t{static_cast<uint32_t>(node)} << 8) | static_cast<unsigned char>(c);
      const auto [it, added] = children_.try_emplace(key, static_cast<int32_t>(node_token_.size()));
      if (added) node_token_.push_back(-1);
      node = it->second;
    }
    // The same content twice: the first entry is the one that matches.
    if (node_token_[static_cast<std::size_t>(node)] < 0) node_token_[static_cast<std::size_t>(node)] = static_cast<int32_t>(i);
  }
}

int32_t AddedVocabulary::child(int32_t node, unsigned char byte) const {
  const auto it = children_.find((uint64_t{static_cast<uint32_t>(node)} << 8) | byte);
  return it == children_.end() ? -1 : it->second;
}

const AddedToken* AddedVocabulary::find(int32_t id) const {
  const auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

void AddedVocabulary::split(std::string_view text, bool normalized, bool match_special,
                            std::vector<Segment>& out) const {
  std::size_t emitted = 0;  // end of the last segment appended
  for (std::size_t i = 0; i < text.size();) {
    // The longest token starting here among those of this kind.
    int32_t best = -1;
    std::size_t best_end = i;
    int32_t node = 0;
    for (std::size_t j = i; j < text.size(); ++j) {
      node = child(node, static_cast<unsigned char>(text[j]));
      if (node < 0) break;
      const int32_t t = node_token_[static_cast<std::size_t>(node)];
      if (t >= 0 && tokens_[static_cast<std::size_t>(t)].normalized == normalized) {
        best = t;
        best_end = j + 1;
      }
    }
    if (best < 0) {
      ++i;
      continue;
    }
    const AddedToken& token = tokens_[static_cast<std::size_t>(best)];
    std::size_t start = i, stop = best_end;
    i = best_end;
    if (token.special && !match_special) continue;
    if (token.single_word && (is_word_char(last_char(text.substr(0, start))) || is_word_char(first_char(text.substr(stop))))) {
      continue;
    }
    if (token.lstrip) start = std::max(trailing_space_start(text.substr(0, start)), emitted);
    if (token.rstrip) stop += leading_space_end(text.substr(stop));
    if (emitted < start) out.push_back({-1, emitted, start});
    out.push_back({token.id, start, stop});
    emitted = stop;
    i = std::max(i, stop);
  }
  if (emitted < text.size()) out.push_back({-1, emitted, text.size()});
}

}  // namespace lamina::model::detail::hf
