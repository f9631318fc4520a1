// Grammars bound to a vocabulary: token masks from a trie walk over the
// lazily determinised recognizer, cached per recognizer state.
#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

#include "grammar/gbnf_parser.h"
#include "grammar/json_schema.h"
#include "grammar/recognizer.h"
#include "grammar/token_trie.h"
#include "lamina/model/grammar.h"
#include "lamina/model/tokenizer.h"

namespace lamina::model {

struct Grammar::Impl {
  grammar::Ir ir;
};

Grammar::Grammar(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Grammar::~Grammar() = default;

std::shared_ptr<const Grammar> Grammar::from_gbnf(std::string_view text, std::string_view root) {
  auto impl = std::make_unique<Impl>();
  impl->ir = grammar::parse_gbnf(text, root);
  return std::shared_ptr<const Grammar>(new Grammar(std::move(impl)));
}

std::string Grammar::json_schema_to_gbnf(std::string_view schema, const JsonSchemaOptions& options) {
  return grammar::compile_json_schema(schema, options);
}

std::shared_ptr<const Grammar> Grammar::from_json_schema(std::string_view schema, const JsonSchemaOptions& options) {
  return from_gbnf(json_schema_to_gbnf(schema, options));
}

std::shared_ptr<const Grammar> Grammar::json_object() {
  static const std::shared_ptr<const Grammar> grammar = from_gbnf(grammar::json_object_gbnf());
  return grammar;
}

GrammarVocabulary::Impl::Impl(std::vector<std::string> pieces_in, std::vector<bool> grammar_token_in,
                              std::vector<int32_t> eog_in)
    : n_vocab(static_cast<int32_t>(pieces_in.size())),
      pieces(std::move(pieces_in)),
      grammar_token(std::move(grammar_token_in)),
      eog(std::move(eog_in)) {
  for (std::size_t i = 0; i < pieces.size(); ++i)
    if (grammar_token[i] && !pieces[i].empty()) token_ids.push_back(static_cast<int32_t>(i));
  std::sort(token_ids.begin(), token_ids.end(), [&](int32_t a, int32_t b) {
    return pieces[static_cast<std::size_t>(a)] < pieces[static_cast<std::size_t>(b)] ||
           (pieces[static_cast<std::size_t>(a)] == pieces[static_cast<std::size_t>(b)] && a < b);
  });
  // In sorted order each token extends the path of the previous one past
  // their common prefix; a node's subtree ends when it leaves the path.
  std::vector<uint32_t> path;
  const std::string* previous = nullptr;
  for (uint32_t t = 0; t < token_ids.size(); ++t) {
    const std::string& piece = pieces[static_cast<std::size_t>(token_ids[t])];
    std::size_t common = 0;
    if (previous)
      while (common < previous->size() && common < piece.size() && (*previous)[common] == piece[common]) ++common;
    while (path.size() > common) {
      nodes[path.back()].skip = static_cast<uint32_t>(nodes.size());
      path.pop_back();
    }
    for (std::size_t d = common; d < piece.size(); ++d) {
      path.push_back(static_cast<uint32_t>(nodes.size()));
      nodes.push_back({static_cast<unsigned char>(piece[d]), static_cast<uint32_t>(d + 1), 0, t, t});
    }
    TrieNode& end = nodes[path.back()];
    if (end.token_end != t) end.token_begin = t;
    end.token_end = t + 1;
    max_depth = std::max<uint32_t>(max_depth, static_cast<uint32_t>(piece.size()));
    previous = &piece;
  }
  while (!path.empty()) {
    nodes[path.back()].skip = static_cast<uint32_t>(nodes.size());
    path.pop_back();
  }
}

GrammarVocabulary::GrammarVocabulary(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GrammarVocabulary::~GrammarVocabulary() = default;
int32_t GrammarVocabulary::n_vocab() const { return impl_->n_vocab; }

std::shared_ptr<const GrammarVocabulary> GrammarVocabulary::from_tokenizer(const Tokenizer& tokenizer) {
  return from_tokenizer(tokenizer, {});
}

std::shared_ptr<const GrammarVocabulary> GrammarVocabulary::from_tokenizer(const Tokenizer& tokenizer,
                                                                           const std::vector<std::string>& markers) {
  const int32_t n = tokenizer.n_vocab();
  std::vector<std::string> pieces(static_cast<std::size_t>(n));
  std::vector<bool> grammar_token(static_cast<std::size_t>(n), false);
  std::vector<int32_t> eog;
  for (int32_t id = 0; id < n; ++id) {
    if (tokenizer.is_eog(id)) {
      eog.push_back(id);
    } else if (!tokenizer.is_special(id)) {
      pieces[static_cast<std::size_t>(id)] = tokenizer.token_to_piece(id, false);
      grammar_token[static_cast<std::size_t>(id)] = true;
    } else if (!markers.empty()) {
      std::string text = tokenizer.token_to_piece(id, true);
      if (std::find(markers.begin(), markers.end(), text) != markers.end()) {
        pieces[static_cast<std::size_t>(id)] = std::move(text);
        grammar_token[static_cast<std::size_t>(id)] = true;
      }
    }
  }
  return std::shared_ptr<const GrammarVocabulary>(
      new GrammarVocabulary(std::make_unique<Impl>(std::move(pieces), std::move(grammar_token), std::move(eog))));
}

std::shared_ptr<const GrammarVocabulary> GrammarVocabulary::from_pieces(std::vector<std::string> pieces,
                                                                        std::vector<int32_t> eog) {
  std::vector<bool> grammar_token(pieces.size(), true);
  for (int32_t id : eog) {
    if (id < 0 || static_cast<std::size_t>(id) >= pieces.size())
      throw std::invalid_argument("end-of-generation token " + std::to_string(id) + " is outside the vocabulary");
    grammar_token[static_cast<std::size_t>(id)] = false;
  }
  return std::shared_ptr<const GrammarVocabulary>(
      new GrammarVocabulary(std::make_unique<Impl>(std::move(pieces), std::move(grammar_token), std::move(eog))));
}

// The recognizer and the masks of the states seen so far, shared by the
// sequences under one constraint (one engine thread, or several: a mutex).
struct TokenConstraint::Impl {
  Impl(const grammar::Ir& ir, std::shared_ptr<const GrammarVocabulary> vocab_in)
      : recognizer(ir), vocab(std::move(vocab_in)), words((static_cast<std::size_t>(vocab->n_vocab()) + 63) / 64) {}

  const std::vector<uint64_t>& mask(uint32_t state);
  std::vector<uint64_t> reference_mask(uint32_t state);

  std::mutex mutex;
  grammar::Recognizer recognizer;
  std::shared_ptr<const GrammarVocabulary> vocab;
  std::size_t words;
  std::unordered_map<uint32_t, std::vector<uint64_t>> masks;
  std::vector<int32_t> depth_states;  // scratch of the trie walk
};

namespace {

// Masks kept per constraint before the cache starts over (a few hundred
// states of a 150k vocabulary).
constexpr std::size_t kMaskCacheBytes = std::size_t{64} << 20;

void set_bit(std::vector<uint64_t>& bits, int32_t id) {
  bits[static_cast<std::size_t>(id) >> 6] |= uint64_t{1} << (static_cast<uint32_t>(id) & 63);
}

}  // namespace

const std::vector<uint64_t>& TokenConstraint::Impl::mask(uint32_t state) {
  if (auto it = masks.find(state); it != masks.end()) return it->second;
  if ((masks.size() + 1) * words * sizeof(uint64_t) > kMaskCacheBytes) masks.clear();
  std::vector<uint64_t> bits(words, 0);
  const auto& v = vocab->impl();
  depth_states.assign(v.max_depth + 1, 0);
  depth_states[0] = static_cast<int32_t>(state);
  for (std::size_t i = 0; i < v.nodes.size();) {
    const auto& node = v.nodes[i];
    const int32_t next =
        recognizer.next_state(static_cast<uint32_t>(depth_states[node.depth - 1]), node.byte);
    if (next == grammar::Recognizer::kDead) {
      i = node.skip;
      continue;
    }
    depth_states[node.depth] = next;
    for (uint32_t t = node.token_begin; t < node.token_end; ++t) set_bit(bits, v.token_ids[t]);
    ++i;
  }
  if (recognizer.accepting(state))
    for (int32_t id : v.eog) set_bit(bits, id);
  return masks.emplace(state, std::move(bits)).first->second;
}

std::vector<uint64_t> TokenConstraint::Impl::reference_mask(uint32_t state) {
  std::vector<uint64_t> bits(words, 0);
  const auto& v = vocab->impl();
  for (int32_t id = 0; id < v.n_vocab; ++id) {
    const std::string& piece = v.pieces[static_cast<std::size_t>(id)];
    if (!v.grammar_token[static_cast<std::size_t>(id)] || piece.empty()) continue;
    std::vector<uint32_t> stacks = recognizer.stacks(state);
    for (char c : piece) {
      stacks = recognizer.step(stacks, static_cast<unsigned char>(c));
      if (stacks.empty()) break;
    }
    if (!stacks.empty()) set_bit(bits, id);
  }
  if (recognizer.accepting(state))
    for (int32_t id : v.eog) set_bit(bits, id);
  return bits;
}

TokenConstraint::TokenConstraint(std::shared_ptr<const Grammar> grammar,
                                 std::shared_ptr<const GrammarVocabulary> vocabulary) {
  if (!grammar || !vocabulary) throw std::invalid_argument("TokenConstraint needs a grammar and a vocabulary");
  impl_ = std::make_unique<Impl>(grammar->impl().ir, std::move(vocabulary));
}
TokenConstraint::~TokenConstraint() = default;
int32_t TokenConstraint::n_vocab() const { return impl_->vocab->n_vocab(); }

GrammarMatcher::GrammarMatcher(std::shared_ptr<TokenConstraint> constraint)
    : constraint_(std::move(constraint)), state_(constraint_->impl().recognizer.initial_state()) {}

std::vector<uint64_t> GrammarMatcher::allowed() {
  auto& c = constraint_->impl();
  std::lock_guard lock(c.mutex);
  return c.mask(state_);
}

std::vector<uint64_t> GrammarMatcher::allowed_reference() const {
  auto& c = constraint_->impl();
  std::lock_guard lock(c.mutex);
  return c.reference_mask(state_);
}

std::size_t GrammarMatcher::mask_logits(std::span<float> logits) {
  auto& c = constraint_->impl();
  std::lock_guard lock(c.mutex);
  const std::vector<uint64_t>& bits = c.mask(state_);
  std::size_t n_allowed = 0;
  for (std::size_t i = 0; i < logits.size(); ++i) {
    if ((bits[i >> 6] >> (i & 63)) & 1u)
      ++n_allowed;
    else
      logits[i] = -std::numeric_limits<float>::infinity();
  }
  return n_allowed;
}

bool GrammarMatcher::accept_bytes(std::string_view bytes) {
  auto& c = constraint_->impl();
  std::lock_guard lock(c.mutex);
  uint32_t state = state_;
  for (char b : bytes) {
    const int32_t next = c.recognizer.next_state(state, static_cast<unsigned char>(b));
    if (next == grammar::Recognizer::kDead) return false;
    state = static_cast<uint32_t>(next);
  }
  state_ = state;
  return true;
}

bool GrammarMatcher::accept(int32_t token) {
  const auto& v = constraint_->impl().vocab->impl();
  if (token < 0 || token >= v.n_vocab) return false;
  if (std::find(v.eog.begin(), v.eog.end(), token) != v.eog.end()) return can_end();
  const std::string& piece = v.pieces[static_cast<std::size_t>(token)];
  if (!v.grammar_token[static_cast<std::size_t>(token)] || piece.empty()) return false;
  return accept_bytes(piece);
}

bool GrammarMatcher::can_end() const {
  auto& c = constraint_->impl();
  std::lock_guard lock(c.mutex);
  return c.recognizer.accepting(state_);
}

bool GrammarMatcher::must_end() const {
  auto& c = constraint_->impl();
  std::lock_guard lock(c.mutex);
  return !c.recognizer.expects_more(state_);
}

}  // namespace lamina::model
