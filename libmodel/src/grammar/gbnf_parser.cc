// GBNF, the grammar language of llama.cpp: `name ::= alternatives`, one rule
// per line (alternatives and groups may continue over lines), "literals",
// [classes] with ranges and ^ negation, `.` for any character, (groups),
// the postfix operators * + ? {m} {m,} {m,n}, and # comments.
#include "grammar/gbnf_parser.h"

#include <algorithm>
#include <string>
#include <vector>

#include "lamina/model/grammar.h"
#include "utf8.h"

namespace lamina::model::grammar {
namespace {

constexpr uint32_t kMaxRepetition = 4096;  // bounds the rules {m,n} unrolls into
constexpr int kMaxGroupDepth = 256;        // bounds the parser's recursion

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Ir parse(std::string_view root_name) {
    for (;;) {
      skip_space(true);
      if (at_end()) break;
      parse_rule();
    }
    for (const auto& [rule, offset] : references_)
      if (!builder_.defined(rule)) fail_at(offset, "rule '" + builder_.name(rule) + "' is not defined");
    const std::string root(root_name);
    const uint32_t root_id = builder_.rule_id(root);
    if (!builder_.defined(root_id)) throw GrammarError("the grammar has no rule '" + root + "' to start from");
    Ir ir = builder_.take(root_id);
    check_ir(ir);
    return ir;
  }

 private:
  bool at_end() const { return pos_ >= text_.size(); }
  char peek(std::size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }

  [[noreturn]] void fail_at(std::size_t offset, const std::string& what) const {
    std::size_t line = 1, column = 1;
    for (std::size_t i = 0; i < offset && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else if (!utf8::is_continuation(static_cast<unsigned char>(text_[i]))) {
        ++column;
      }
    }
    throw GrammarError("grammar line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + what);
  }
  [[noreturn]] void fail(const std::string& what) const { fail_at(pos_, what); }

  // Spaces, tabs and comments; newlines too where a rule may continue.
  void skip_space(bool newlines) {
    while (!at_end()) {
      const char c = peek();
      if (c == ' ' || c == '\t' || (newlines && (c == '\n' || c == '\r'))) {
        ++pos_;
      } else if (c == '#') {
        while (!at_end() && peek() != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  std::string parse_name() {
    const std::size_t start = pos_;
    while (!at_end() && is_name_char(peek())) ++pos_;
    if (pos_ == start) fail("expected a rule name");
    return std::string(text_.substr(start, pos_ - start));
  }

  void parse_rule() {
    const std::size_t start = pos_;
    const std::string name = parse_name();
    const uint32_t rule = builder_.rule_id(name);
    if (builder_.defined(rule)) fail_at(start, "rule '" + name + "' is defined twice");
    builder_.mark_defined(rule);
    skip_space(false);
    if (text_.substr(pos_, 3) != "::=") fail("expected '::=' after the rule name '" + name + "'");
    pos_ += 3;
    skip_space(true);
    parse_alternatives(rule, false);
    if (!at_end() && peek() != '\n' && peek() != '\r') fail("expected the end of the line after rule '" + name + "'");
  }

  void parse_alternatives(uint32_t rule, bool nested) {
    builder_.add_alternative(rule, parse_sequence(nested));
    for (;;) {
      // An alternative may also start a following line with '|'.
      const std::size_t before = pos_;
      skip_space(true);
      if (peek() != '|') {
        pos_ = before;
        break;
      }
      ++pos_;
      skip_space(true);
      builder_.add_alternative(rule, parse_sequence(nested));
    }
  }

  std::vector<Element> parse_sequence(bool nested) {
    std::vector<Element> seq;
    for (;;) {
      const std::size_t item_start = seq.size();
      const char c = peek();
      if (c == '"') {
        ++pos_;
        while (peek() != '"') {
          if (at_end() || peek() == '\n') fail("unterminated string literal");
          std::string enc;
          utf8::append(enc, parse_char());
          for (char b : enc) {
            ByteSet set;
            set.add(static_cast<unsigned char>(b));
            seq.push_back(bytes_element(set));
          }
        }
        ++pos_;
      } else if (c == '[') {
        seq.push_back(parse_class());
      } else if (c == '.') {
        ++pos_;
        seq.push_back(class_element({{0, 0x10FFFF}}));
      } else if (c == '(') {
        if (++group_depth_ > kMaxGroupDepth) fail("groups nest more than " + std::to_string(kMaxGroupDepth) + " deep");
        ++pos_;
        skip_space(true);
        const uint32_t group = builder_.new_rule("group");
        parse_alternatives(group, true);
        if (peek() != ')') fail("expected ')' to close the group");
        ++pos_;
        --group_depth_;
        seq.push_back(rule_element(group));
      } else if (is_name_char(c)) {
        const std::size_t at = pos_;
        const uint32_t rule = builder_.rule_id(parse_name());
        references_.emplace_back(rule, at);
        seq.push_back(rule_element(rule));
      } else {
        break;
      }
      skip_space(nested);
      while (peek() == '*' || peek() == '+' || peek() == '?' || peek() == '{') {
        apply_postfix(seq, item_start);
        skip_space(nested);
      }
    }
    return seq;
  }

  // Replaces the item seq[start..] by its repetition.
  void apply_postfix(std::vector<Element>& seq, std::size_t start) {
    if (start == seq.size()) fail("a repetition operator needs something before it");
    if (seq.size() - start > 1) {
      const uint32_t wrap = builder_.new_rule("item");
      builder_.add_alternative(wrap, std::vector<Element>(seq.begin() + static_cast<std::ptrdiff_t>(start), seq.end()));
      seq.resize(start);
      seq.push_back(rule_element(wrap));
    }
    const Element item = seq.back();
    seq.pop_back();
    uint32_t min = 0, max = 0;
    bool unbounded = false;
    const char op = peek();
    ++pos_;
    if (op == '*') {
      unbounded = true;
    } else if (op == '+') {
      min = 1;
      unbounded = true;
    } else if (op == '?') {
      max = 1;
    } else {
      skip_space(true);
      min = parse_count();
      skip_space(true);
      if (peek() == ',') {
        ++pos_;
        skip_space(true);
        if (peek() == '}') {
          unbounded = true;
        } else {
          max = parse_count();
          if (max < min) fail("the repetition's upper bound is below its lower bound");
        }
      } else {
        max = min;
      }
      skip_space(true);
      if (peek() != '}') fail("expected '}' to close the repetition");
      ++pos_;
    }
    for (uint32_t i = 0; i < min; ++i) seq.push_back(item);
    if (unbounded) {
      const uint32_t star = builder_.new_rule("star");
      builder_.add_alternative(star, {item, rule_element(star)});
      builder_.add_alternative(star, {});
      seq.push_back(rule_element(star));
    } else if (max > min) {
      // (x (x (x)?)?)? for up to max - min more.
      uint32_t inner = 0;
      for (uint32_t k = 0; k < max - min; ++k) {
        const uint32_t opt = builder_.new_rule("opt");
        if (k == 0)
          builder_.add_alternative(opt, {item});
        else
          builder_.add_alternative(opt, {item, rule_element(inner)});
        builder_.add_alternative(opt, {});
        inner = opt;
      }
      seq.push_back(rule_element(inner));
    }
  }

  uint32_t parse_count() {
    const std::size_t start = pos_;
    uint64_t value = 0;
    while (peek() >= '0' && peek() <= '9') {
      value = value * 10 + static_cast<uint64_t>(peek() - '0');
      if (value > kMaxRepetition) fail("repetition counts are limited to " + std::to_string(kMaxRepetition));
      ++pos_;
    }
    if (pos_ == start) fail("expected a number in the repetition");
    return static_cast<uint32_t>(value);
  }

  uint32_t parse_hex(std::size_t digits) {
    uint32_t value = 0;
    for (std::size_t i = 0; i < digits; ++i) {
      const char c = peek();
      uint32_t d;
      if (c >= '0' && c <= '9') d = static_cast<uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f') d = static_cast<uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') d = static_cast<uint32_t>(c - 'A' + 10);
      else fail("expected " + std::to_string(digits) + " hexadecimal digits");
      value = value * 16 + d;
      ++pos_;
    }
    if (value > 0x10FFFF) fail("escape beyond U+10FFFF");
    return value;
  }

  // One character of a literal or class, escapes decoded.
  char32_t parse_char() {
    if (peek() == '\\') {
      ++pos_;
      const char e = peek();
      ++pos_;
      switch (e) {
        case 'n': return '\n';
        case 'r': return '\r';
        case 't': return '\t';
        case 'x': return parse_hex(2);
        case 'u': return parse_hex(4);
        case 'U': return parse_hex(8);
        case '\\': case '"': case '[': case ']': case '-': case '^': case '/': case '.': return static_cast<unsigned char>(e);
        default: fail_at(pos_ - 2, std::string("unknown escape '\\") + e + "'");
      }
    }
    char32_t cp = 0;
    const std::size_t n = utf8::decode_at(text_, pos_, cp, utf8::Check::Strict);
    if (n == 0) fail("invalid UTF-8");
    pos_ += n;
    return cp;
  }

  Element parse_class() {
    ++pos_;  // '['
    bool negated = false;
    if (peek() == '^') {
      negated = true;
      ++pos_;
    }
    CodePointRanges ranges;
    while (peek() != ']') {
      if (at_end() || peek() == '\n') fail("unterminated character class");
      const char32_t lo = parse_char();
      char32_t hi = lo;
      if (peek() == '-' && peek(1) != ']' && peek(1) != '\0') {
        ++pos_;
        hi = parse_char();
        if (hi < lo) fail("the character range ends before it starts");
      }
      ranges.emplace_back(lo, hi);
    }
    ++pos_;
    std::sort(ranges.begin(), ranges.end());
    CodePointRanges merged;
    for (auto r : ranges) {
      if (!merged.empty() && r.first <= merged.back().second + 1)
        merged.back().second = std::max(merged.back().second, r.second);
      else
        merged.push_back(r);
    }
    if (negated) {
      CodePointRanges complement;
      char32_t next = 0;
      for (auto [lo, hi] : merged) {
        if (lo > next) complement.emplace_back(next, lo - 1);
        next = hi + 1;
      }
      if (next <= 0x10FFFF) complement.emplace_back(next, 0x10FFFF);
      merged = std::move(complement);
    }
    return class_element(merged);
  }

  // A class of ASCII characters is one byte element; wider ones a rule of
  // UTF-8 byte sequences.
  Element class_element(const CodePointRanges& ranges) {
    if (!ranges.empty() && ranges.back().second <= 0x7F) {
      ByteSet set;
      for (auto [lo, hi] : ranges) set.add_range(lo, hi);
      return bytes_element(set);
    }
    const uint32_t rule = builder_.new_rule("class");
    add_code_point_alternatives(builder_, rule, ranges);
    if (ranges.empty()) builder_.add_alternative(rule, {bytes_element(ByteSet{})});
    return rule_element(rule);
  }

  std::string_view text_;
  std::size_t pos_ = 0;
  int group_depth_ = 0;
  IrBuilder builder_;
  std::vector<std::pair<uint32_t, std::size_t>> references_;
};

}  // namespace

Ir parse_gbnf(std::string_view text, std::string_view root) { return Parser(text).parse(root); }

}  // namespace lamina::model::grammar
