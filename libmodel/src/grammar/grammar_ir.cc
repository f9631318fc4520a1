#include "grammar/grammar_ir.h"

#include <algorithm>
#include <functional>
#include <string>

#include "lamina/model/grammar.h"
#include "utf8.h"

namespace lamina::model::grammar {
namespace {

// Bounds on what a grammar text may expand to (repetitions unroll) and on
// how deep rules may start one inside the other, so that hostile grammars
// cost bounded memory and stack.
constexpr std::size_t kMaxElements = std::size_t{1} << 20;
constexpr uint32_t kMaxLeftDepth = 1000;

}  // namespace

uint32_t IrBuilder::rule_id(const std::string& name) {
  for (const auto& [n, id] : by_name_)
    if (n == name) return id;
  const auto id = static_cast<uint32_t>(ir_.rule_names.size());
  ir_.rule_names.push_back(name);
  ir_.alternatives.emplace_back();
  defined_.push_back(false);
  by_name_.emplace_back(name, id);
  return id;
}

uint32_t IrBuilder::new_rule(const std::string& base) {
  const auto id = static_cast<uint32_t>(ir_.rule_names.size());
  ir_.rule_names.push_back(base + "_" + std::to_string(id));
  ir_.alternatives.emplace_back();
  defined_.push_back(true);
  return id;
}

void IrBuilder::add_alternative(uint32_t rule, const std::vector<Element>& sequence) {
  if (ir_.elements.size() + sequence.size() >= kMaxElements)
    throw GrammarError("the grammar is too large (more than " + std::to_string(kMaxElements) + " elements once expanded)");
  ir_.alternatives[rule].push_back(static_cast<uint32_t>(ir_.elements.size()));
  ir_.elements.insert(ir_.elements.end(), sequence.begin(), sequence.end());
  ir_.elements.push_back(Element{});
}

Ir IrBuilder::take(uint32_t root) {
  ir_.root = root;
  return std::move(ir_);
}

namespace {

// Splits [lo, hi] (no surrogates, one encoded length) until every range has,
// at each byte position, one contiguous range of bytes; emits each.
void split_utf8(char32_t lo, char32_t hi, const std::function<void(char32_t, char32_t)>& emit) {
  for (char32_t boundary : {char32_t{0x7F}, char32_t{0x7FF}, char32_t{0xFFFF}}) {
    if (lo <= boundary && boundary < hi) {
      split_utf8(lo, boundary, emit);
      split_utf8(boundary + 1, hi, emit);
      return;
    }
  }
  std::string enc;
  utf8::append(enc, hi);
  const std::size_t n = enc.size();
  for (std::size_t i = 1; i < n; ++i) {
    const char32_t m = (char32_t{1} << (6 * i)) - 1;
    if ((lo & ~m) == (hi & ~m)) continue;
    if ((lo & m) != 0) {
      split_utf8(lo, lo | m, emit);
      split_utf8((lo | m) + 1, hi, emit);
      return;
    }
    if ((hi & m) != m) {
      split_utf8(lo, (hi & ~m) - 1, emit);
      split_utf8(hi & ~m, hi, emit);
      return;
    }
  }
  emit(lo, hi);
}

}  // namespace

void add_code_point_alternatives(IrBuilder& builder, uint32_t rule, const CodePointRanges& ranges) {
  ByteSet ascii;
  std::vector<std::pair<char32_t, char32_t>> wide;
  for (auto [lo, hi] : ranges) {
    if (hi > 0x10FFFF) hi = 0x10FFFF;
    if (lo > hi) continue;
    // Surrogates are not characters: UTF-8 never encodes them.
    if (lo < 0xD800 && hi >= 0xD800) {
      if (hi > 0xDFFF) wide.emplace_back(0xE000, hi);
      hi = 0xD7FF;
    } else if (lo >= 0xD800 && lo <= 0xDFFF) {
      if (hi <= 0xDFFF) continue;
      lo = 0xE000;
    }
    if (lo <= 0x7F) {
      ascii.add_range(lo, std::min<char32_t>(hi, 0x7F));
      if (hi <= 0x7F) continue;
      lo = 0x80;
    }
    wide.emplace_back(lo, hi);
  }
  if (!ascii.empty()) builder.add_alternative(rule, {bytes_element(ascii)});
  for (auto [lo, hi] : wide) {
    split_utf8(lo, hi, [&](char32_t a, char32_t b) {
      std::string ea, eb;
      utf8::append(ea, a);
      utf8::append(eb, b);
      std::vector<Element> seq;
      for (std::size_t i = 0; i < ea.size(); ++i) {
        ByteSet set;
        set.add_range(static_cast<unsigned char>(ea[i]), static_cast<unsigned char>(eb[i]));
        seq.push_back(bytes_element(set));
      }
      builder.add_alternative(rule, seq);
    });
  }
}

void check_ir(const Ir& ir) {
  const std::size_t n = ir.alternatives.size();
  // Nullable and productive rules, to a fixed point.
  std::vector<bool> nullable(n, false), productive(n, false);
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t r = 0; r < n; ++r) {
      for (uint32_t pos : ir.alternatives[r]) {
        bool all_nullable = true, all_productive = true;
        for (uint32_t p = pos; ir.elements[p].kind != Element::Kind::End; ++p) {
          const Element& e = ir.elements[p];
          if (e.kind == Element::Kind::Bytes) {
            all_nullable = false;
            if (e.bytes.empty()) all_productive = false;
          } else {
            all_nullable = all_nullable && nullable[e.rule];
            all_productive = all_productive && productive[e.rule];
          }
        }
        if (all_nullable && !nullable[r]) nullable[r] = changed = true;
        if (all_productive && !productive[r]) productive[r] = changed = true;
      }
    }
  }
  if (!productive[ir.root])
    throw GrammarError("the grammar matches no text (rule '" + ir.rule_names[ir.root] + "' never completes)");
  // Left corners: a rule reachable at the start of one of its own
  // alternatives would expand forever.
  std::vector<uint8_t> mark(n, 0);  // 0 unseen, 1 on the path, 2 done
  std::function<void(uint32_t, uint32_t)> visit = [&](uint32_t r, uint32_t depth) {
    if (depth > kMaxLeftDepth)
      throw GrammarError("rules start inside one another more than " + std::to_string(kMaxLeftDepth) + " deep");
    mark[r] = 1;
    for (uint32_t pos : ir.alternatives[r]) {
      for (uint32_t p = pos; ir.elements[p].kind == Element::Kind::Rule; ++p) {
        const uint32_t s = ir.elements[p].rule;
        if (mark[s] == 1) throw GrammarError("rule '" + ir.rule_names[s] + "' is left-recursive");
        if (mark[s] == 0) visit(s, depth + 1);
        if (!nullable[s]) break;
      }
    }
    mark[r] = 2;
  };
  for (uint32_t r = 0; r < n; ++r)
    if (mark[r] == 0) visit(r, 0);
}

}  // namespace lamina::model::grammar
