// Internal: a pushdown recognizer of a byte-level grammar, determinised
// lazily. A stack is a chain of grammar positions (the element to match now,
// then where each enclosing rule goes on), interned as nodes that share their
// tails; a state is the set of stacks the text so far may have left, interned
// too, so that a byte's transition from a state is computed once and a state
// can key a cache of token masks.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "grammar/grammar_ir.h"

namespace lamina::model::grammar {

class Recognizer {
 public:
  static constexpr int32_t kDead = -1;
  // Stack node 0 is the empty stack: the grammar is complete.
  static constexpr uint32_t kComplete = 0;

  explicit Recognizer(Ir ir);

  uint32_t initial_state() const { return initial_; }
  // The state after byte `b`, or kDead.
  int32_t next_state(uint32_t state, unsigned char b);
  bool accepting(uint32_t state) const;
  // Some stack still expects a byte.
  bool expects_more(uint32_t state) const;
  const std::vector<uint32_t>& stacks(uint32_t state) const { return states_[state]; }
  std::size_t n_states() const { return states_.size(); }

  // The stacks after byte `b` from `stacks` (sorted, unique), computed
  // directly: no state interning, no transition table.
  std::vector<uint32_t> step(const std::vector<uint32_t>& stacks, unsigned char b);

 private:
  struct Node {
    uint32_t pos;
    uint32_t parent;
    uint32_t depth;  // nodes in the chain, this one included
  };
  uint32_t intern_node(uint32_t pos, uint32_t parent);
  // The stacks whose top is a byte element (or the empty stack) that `node` expands to.
  const std::vector<uint32_t>& closure(uint32_t node);
  uint32_t intern_state(std::vector<uint32_t> stacks);

  struct VectorHash {
    std::size_t operator()(const std::vector<uint32_t>& v) const;
  };

  Ir ir_;
  std::vector<Node> nodes_;
  std::unordered_map<uint64_t, uint32_t> node_ids_;
  std::vector<std::vector<uint32_t>> closures_;
  std::vector<bool> closure_done_;
  std::vector<std::vector<uint32_t>> states_;
  std::unordered_map<std::vector<uint32_t>, uint32_t, VectorHash> state_ids_;
  std::vector<std::vector<int32_t>> transitions_;  // per state: 256 entries, made on first use
  uint32_t initial_ = 0;
};

}  // namespace lamina::model::grammar
