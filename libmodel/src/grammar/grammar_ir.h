// Internal: a context-free grammar over bytes, as the GBNF parser and the
// JSON-schema compiler produce it and the recognizer runs it. Characters of
// the source grammar (Unicode code points) are lowered to UTF-8 byte
// sequences, so the recognizer never sees a partial character: a token that
// ends inside one simply leaves the recognizer between two byte elements.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace lamina::model::grammar {

// A set of bytes, one bit each.
struct ByteSet {
  std::array<uint64_t, 4> bits{};
  bool has(unsigned char b) const { return (bits[b >> 6] >> (b & 63)) & 1u; }
  void add(unsigned char b) { bits[b >> 6] |= uint64_t{1} << (b & 63); }
  void add_range(unsigned lo, unsigned hi) {
    for (unsigned b = lo; b <= hi; ++b) add(static_cast<unsigned char>(b));
  }
  bool empty() const { return (bits[0] | bits[1] | bits[2] | bits[3]) == 0; }
};

// One element of an alternative: a byte from a set, a reference to a rule,
// or the end of the alternative.
struct Element {
  enum class Kind : uint8_t { Bytes, Rule, End };
  Kind kind = Kind::End;
  uint32_t rule = 0;  // Kind::Rule
  ByteSet bytes;      // Kind::Bytes
};

// Every alternative of every rule lives in one array, each ended by an End
// element, so a position in it is a grammar position.
struct Ir {
  std::vector<Element> elements;
  std::vector<std::vector<uint32_t>> alternatives;  // per rule: first positions
  std::vector<std::string> rule_names;
  uint32_t root = 0;
};

// Builds an Ir one rule at a time; the GBNF parser drives it.
class IrBuilder {
 public:
  // The id of a rule by name, made (without alternatives) on first use.
  uint32_t rule_id(const std::string& name);
  // A fresh helper rule named after `base`.
  uint32_t new_rule(const std::string& base);
  // Appends an alternative (a sequence of elements, End not included) to `rule`.
  void add_alternative(uint32_t rule, const std::vector<Element>& sequence);
  bool defined(uint32_t rule) const { return defined_[rule]; }
  void mark_defined(uint32_t rule) { defined_[rule] = true; }
  const std::string& name(uint32_t rule) const { return ir_.rule_names[rule]; }
  uint32_t n_rules() const { return static_cast<uint32_t>(ir_.rule_names.size()); }
  Ir take(uint32_t root);

 private:
  Ir ir_;
  std::vector<bool> defined_;
  std::vector<std::pair<std::string, uint32_t>> by_name_;  // few rules: linear search is fine
};

inline Element bytes_element(const ByteSet& set) {
  Element e;
  e.kind = Element::Kind::Bytes;
  e.bytes = set;
  return e;
}

inline Element rule_element(uint32_t rule) {
  Element e;
  e.kind = Element::Kind::Rule;
  e.rule = rule;
  return e;
}

// A set of code points as sorted, disjoint, inclusive ranges.
using CodePointRanges = std::vector<std::pair<char32_t, char32_t>>;

// Appends to `rule` the alternatives that match exactly the UTF-8 encodings
// of the code points in `ranges` (surrogates never match).
void add_code_point_alternatives(IrBuilder& builder, uint32_t rule, const CodePointRanges& ranges);

// Throws GrammarError when a rule is left-recursive or the root matches no text.
void check_ir(const Ir& ir);

}  // namespace lamina::model::grammar
