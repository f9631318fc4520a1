#include "tokenizer/special_tokens.h"

#include <algorithm>
#include <unordered_map>

namespace lamina::model::detail {

namespace {

struct Occurrence {
  std::size_t begin;
  uint32_t length;
  int32_t rank;
};

}  // namespace

SpecialTokenSplitter::SpecialTokenSplitter(const Vocabulary& vocab) {
  std::vector<int32_t> specials;
  for (int32_t id = 0; id < vocab.size(); ++id) {
    if (vocab.is_special(id) && !vocab.texts[static_cast<std::size_t>(id)].empty()) {
      specials.push_back(id);
    }
  }
  std::stable_sort(specials.begin(), specials.end(), [&](int32_t a, int32_t b) {
    return vocab.texts[static_cast<std::size_t>(a)].size() >
           vocab.texts[static_cast<std::size_t>(b)].size();
  });
  n_ranks_ = specials.size();
  rank_token_ = specials;

  // Built with a map of (node, byte) -> child, then laid out flat for fast lookups.
  std::unordered_map<uint64_t, int32_t> children;
  std::vector<std::vector<Edge>> node_edges(1);
  node_token_.push_back(kNoToken);
  node_rank_.push_back(-1);
  for (std::size_t rank = 0; rank < specials.size(); ++rank) {
    const int32_t id = specials[rank];
    const std::string_view text = vocab.texts[static_cast<std::size_t>(id)];
    int32_t node = 0;
    for (char c : text) {
      const auto byte = static_cast<unsigned char>(c);
      const uint64_t key = (uint64_t{static_cast<uint32_t>(node)} << 8) | byte;
      const auto [it, added] = children.try_emplace(key, static_cast<int32_t>(node_token_.size()));
      if (added) {
        node_edges[static_cast<std::size_t>(node)].push_back(Edge{byte, it->second});
        node_edges.emplace_back();
        node_token_.push_back(kNoToken);
        node_rank_.push_back(-1);
      }
      node = it->second;
    }
    node_token_[static_cast<std::size_t>(node)] = id;
    node_rank_[static_cast<std::size_t>(node)] = static_cast<int32_t>(rank);
    first_byte_[static_cast<unsigned char>(text[0])] = true;
  }
  for (std::vector<Edge>& e : node_edges) {
    std::sort(e.begin(), e.end(), [](const Edge& a, const Edge& b) { return a.byte < b.byte; });
    first_edge_.push_back(static_cast<uint32_t>(edges_.size()));
    edges_.insert(edges_.end(), e.begin(), e.end());
  }
  first_edge_.push_back(static_cast<uint32_t>(edges_.size()));
}

int32_t SpecialTokenSplitter::child(int32_t node, unsigned char byte) const {
  const auto first = edges_.begin() + first_edge_[static_cast<std::size_t>(node)];
  const auto last = edges_.begin() + first_edge_[static_cast<std::size_t>(node) + 1];
  const auto it = std::lower_bound(first, last, byte,
                                   [](const Edge& e, unsigned char b) { return e.byte < b; });
  return it != last && it->byte == byte ? it->child : -1;
}

std::vector<Fragment> SpecialTokenSplitter::split(const Vocabulary& vocab, std::string_view text,
                                                  bool parse_special) const {
  // Every occurrence of every allowed token, in text order.
  std::vector<Occurrence> found;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (!first_byte_[static_cast<unsigned char>(text[i])]) continue;
    int32_t node = 0;
    for (std::size_t j = i; j < text.size(); ++j) {
      node = child(node, static_cast<unsigned char>(text[j]));
      if (node < 0) break;
      const int32_t id = node_token_[static_cast<std::size_t>(node)];
      if (id != kNoToken && (parse_special || vocab.type(id) == TokenType::UserDefined)) {
        found.push_back(Occurrence{i, static_cast<uint32_t>(j + 1 - i),
                                   node_rank_[static_cast<std::size_t>(node)]});
      }
    }
  }
  if (found.empty()) {
    if (text.empty()) return {};
    return {Fragment{kNoToken, 0, text.size()}};
  }

  // Order by rank, keeping text order within a rank (a counting sort: ranks are few).
  std::vector<std::size_t> start(n_ranks_ + 1, 0);
  for (const Occurrence& o : found) ++start[static_cast<std::size_t>(o.rank) + 1];
  for (std::size_t r = 1; r <= n_ranks_; ++r) start[r] += start[r - 1];
  std::vector<Occurrence> by_rank(found.size());
  for (const Occurrence& o : found) by_rank[start[static_cast<std::size_t>(o.rank)]++] = o;

  // An occurrence is taken unless it overlaps one taken before. Those are at least as
  // long, so an overlap always covers one of its two ends.
  std::vector<bool> taken(text.size(), false);
  std::vector<Occurrence> accepted;
  for (const Occurrence& o : by_rank) {
    const std::size_t last = o.begin + o.length - 1;
    if (taken[o.begin] || taken[last]) continue;
    for (std::size_t k = o.begin; k <= last; ++k) taken[k] = true;
    accepted.push_back(o);
  }
  std::sort(accepted.begin(), accepted.end(),
            [](const Occurrence& a, const Occurrence& b) { return a.begin < b.begin; });

  std::vector<Fragment> fragments;
  std::size_t pos = 0;
  for (const Occurrence& o : accepted) {
    if (o.begin > pos) fragments.push_back(Fragment{kNoToken, pos, o.begin});
    fragments.push_back(
        Fragment{rank_token_[static_cast<std::size_t>(o.rank)], o.begin, o.begin + o.length});
    pos = o.begin + o.length;
  }
  if (pos < text.size()) fragments.push_back(Fragment{kNoToken, pos, text.size()});
  return fragments;
}

}  // namespace lamina::model::detail
