#include "grammar/recognizer.h"

#include <algorithm>
#include <string>
#include <utility>

#include "lamina/model/grammar.h"

namespace lamina::model::grammar {
namespace {

// Stack nodes one grammar may create before it is refused: a bound on the
// memory of a hostile grammar (each node also keeps its closure).
constexpr std::size_t kMaxNodes = std::size_t{1} << 22;
constexpr int32_t kUnknown = -2;
// Rules open at once: bounds the recursion of a closure (and the stack of the
// thread that runs it) whatever the grammar and the text.
constexpr uint32_t kMaxDepth = 2048;

void sort_unique(std::vector<uint32_t>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

}  // namespace

std::size_t Recognizer::VectorHash::operator()(const std::vector<uint32_t>& v) const {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ v.size();
  for (uint32_t x : v) h = (h ^ x) * 0x100000001B3ull + (h >> 29);
  return static_cast<std::size_t>(h);
}

Recognizer::Recognizer(Ir ir) : ir_(std::move(ir)) {
  nodes_.push_back({0, 0, 0});  // kComplete
  closures_.push_back({kComplete});
  closure_done_.push_back(true);
  // The root as a one-element sequence: a rule element followed by End.
  const auto root_pos = static_cast<uint32_t>(ir_.elements.size());
  ir_.elements.push_back(rule_element(ir_.root));
  ir_.elements.push_back(Element{});
  initial_ = intern_state(closure(intern_node(root_pos, kComplete)));
}

uint32_t Recognizer::intern_node(uint32_t pos, uint32_t parent) {
  const uint64_t key = (uint64_t{pos} << 32) | parent;
  const auto it = node_ids_.find(key);
  if (it != node_ids_.end()) return it->second;
  if (nodes_.size() >= kMaxNodes) throw GrammarError("the grammar needs too many parser states");
  const uint32_t depth = nodes_[parent].depth + 1;
  if (depth > kMaxDepth)
    throw GrammarError("the text nests more than " + std::to_string(kMaxDepth) + " grammar rules deep");
  const auto id = static_cast<uint32_t>(nodes_.size());
  nodes_.push_back({pos, parent, depth});
  closures_.emplace_back();
  closure_done_.push_back(false);
  node_ids_.emplace(key, id);
  return id;
}

const std::vector<uint32_t>& Recognizer::closure(uint32_t node) {
  if (closure_done_[node]) return closures_[node];
  const Node n = nodes_[node];
  const Element& e = ir_.elements[n.pos];
  std::vector<uint32_t> out;
  if (e.kind == Element::Kind::Bytes) {
    out.push_back(node);
  } else {
    // Where the rule's caller goes on; a rule that ends its alternative
    // returns straight to the caller's caller, so right recursion stays flat.
    const uint32_t cont =
        ir_.elements[n.pos + 1].kind == Element::Kind::End ? n.parent : intern_node(n.pos + 1, n.parent);
    for (uint32_t start : ir_.alternatives[e.rule]) {
      const uint32_t child = ir_.elements[start].kind == Element::Kind::End ? cont : intern_node(start, cont);
      const std::vector<uint32_t>& sub = closure(child);
      out.insert(out.end(), sub.begin(), sub.end());
    }
    sort_unique(out);
  }
  closures_[node] = std::move(out);
  closure_done_[node] = true;
  return closures_[node];
}

uint32_t Recognizer::intern_state(std::vector<uint32_t> stacks) {
  const auto it = state_ids_.find(stacks);
  if (it != state_ids_.end()) return it->second;
  const auto id = static_cast<uint32_t>(states_.size());
  states_.push_back(stacks);
  state_ids_.emplace(std::move(stacks), id);
  transitions_.emplace_back();
  return id;
}

std::vector<uint32_t> Recognizer::step(const std::vector<uint32_t>& stacks, unsigned char b) {
  std::vector<uint32_t> out;
  for (uint32_t node : stacks) {
    if (node == kComplete) continue;
    const Node n = nodes_[node];
    if (!ir_.elements[n.pos].bytes.has(b)) continue;
    const uint32_t next =
        ir_.elements[n.pos + 1].kind == Element::Kind::End ? n.parent : intern_node(n.pos + 1, n.parent);
    const std::vector<uint32_t>& sub = closure(next);
    out.insert(out.end(), sub.begin(), sub.end());
  }
  sort_unique(out);
  return out;
}

int32_t Recognizer::next_state(uint32_t state, unsigned char b) {
  if (transitions_[state].empty()) transitions_[state].assign(256, kUnknown);
  int32_t& slot = transitions_[state][b];
  if (slot != kUnknown) return slot;
  std::vector<uint32_t> next = step(states_[state], b);
  // intern_state may grow transitions_: no reference into it across the call.
  const int32_t result = next.empty() ? kDead : static_cast<int32_t>(intern_state(std::move(next)));
  transitions_[state][b] = result;
  return result;
}

bool Recognizer::accepting(uint32_t state) const {
  const auto& s = states_[state];
  return !s.empty() && s.front() == kComplete;
}

bool Recognizer::expects_more(uint32_t state) const {
  const auto& s = states_[state];
  return !s.empty() && s.back() != kComplete;
}

}  // namespace lamina::model::grammar
