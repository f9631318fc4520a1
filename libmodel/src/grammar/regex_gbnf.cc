// A practical subset of JSON-schema `pattern` regular expressions, compiled
// to GBNF over the characters of a JSON string (each character as JSON
// writes it, so `"` becomes \" and controls are never produced raw).
#include <string>
#include <vector>

#include "grammar/json_schema.h"
#include "utf8.h"

namespace lamina::model::grammar {
namespace {

const char* const kPlainChar = "[^\"\\\\\\x00-\\x1F]";  // any character JSON writes as itself

std::string class_char(char32_t cp) {
  static const char* hex = "0123456789ABCDEF";
  std::string out = cp > 0xFFFF ? "\\U" : "\\u";
  const int digits = cp > 0xFFFF ? 8 : 4;
  for (int i = digits - 1; i >= 0; --i) out += hex[(cp >> (4 * i)) & 15];
  return out;
}

class RegexCompiler {
 public:
  RegexCompiler(std::string_view pattern, const std::string& where) : p_(pattern), where_(where) {}

  std::string compile() {
    bool start_anchor = false, end_anchor = false;
    if (!p_.empty() && p_.front() == '^') {
      start_anchor = true;
      p_.remove_prefix(1);
    }
    if (!p_.empty() && p_.back() == '$' && (p_.size() < 2 || p_[p_.size() - 2] != '\\')) {
      end_anchor = true;
      p_.remove_suffix(1);
    }
    std::string body = "(";
    body += alternation();
    body += ')';
    if (pos_ != p_.size()) fail("unexpected '" + std::string(1, p_[pos_]) + "'");
    // Unanchored patterns match anywhere in the string.
    if (!start_anchor) body = std::string(kPlainChar) + "* " + body;
    if (!end_anchor) body += std::string(" ") + kPlainChar + "*";
    return "(" + body + ")";
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw GrammarError("JSON schema at " + where_ + ": pattern character " + std::to_string(pos_ + 1) + ": " + what +
                       " (supported: literals, \\d \\w \\s, [classes], (groups), |, ., * + ? {m,n})");
  }
  bool at_end() const { return pos_ >= p_.size(); }
  char peek() const { return at_end() ? '\0' : p_[pos_]; }

  std::string alternation() {
    std::string out = sequence();
    while (peek() == '|') {
      ++pos_;
      out += " | ";
      out += sequence();
    }
    return out;
  }

  std::string sequence() {
    std::string out = "\"\"";
    while (!at_end() && peek() != '|' && peek() != ')') {
      std::string a = atom();
      a += quantifier();
      out += " " + a;
    }
    return out;
  }

  std::string quantifier() {
    std::string q;
    const char c = peek();
    if (c == '*' || c == '+' || c == '?') {
      q = std::string(1, c);
      ++pos_;
    } else if (c == '{') {
      const std::size_t close = p_.find('}', pos_);
      if (close == std::string_view::npos) fail("unterminated {m,n}");
      q = std::string(p_.substr(pos_, close - pos_ + 1));
      pos_ = close + 1;
    }
    if (!q.empty() && peek() == '?') ++pos_;  // lazy: the same language
    return q;
  }

  char32_t literal_char() {
    char32_t cp = 0;
    const std::size_t n = utf8::decode_at(p_, pos_, cp, utf8::Check::Strict);
    if (n == 0) fail("invalid UTF-8");
    pos_ += n;
    return cp;
  }

  // A literal character as the JSON text writes it.
  static std::string json_char(char32_t cp) {
    std::string s;
    if (cp == '"' || cp == '\\') {
      s = std::string("\\") + static_cast<char>(cp);
    } else if (cp < 0x20) {
      static const char* hex = "0123456789abcdef";
      s = std::string("\\u00") + hex[cp >> 4] + hex[cp & 15];
    } else {
      utf8::append(s, cp);
    }
    return gbnf_literal(s);
  }

  // The class text (inside [ ]) of \d \w \s, or "" for other escapes.
  static std::string shorthand(char e) {
    switch (e) {
      case 'd': return "0-9";
      case 'w': return "a-zA-Z0-9_";
      case 's': return " ";
      default: return "";
    }
  }

  std::string atom() {
    const char c = peek();
    if (c == '(') {
      ++pos_;
      if (p_.substr(pos_, 2) == "?:") pos_ += 2;
      else if (peek() == '?') fail("lookaround and named groups are not supported");
      std::string inner = alternation();
      if (peek() != ')') fail("expected ')'");
      ++pos_;
      return "(" + inner + ")";
    }
    if (c == '[') return char_class();
    if (c == '.') {
      ++pos_;
      return kPlainChar;
    }
    if (c == '*' || c == '+' || c == '?' || c == '{' || c == '^' || c == '$') fail("misplaced '" + std::string(1, c) + "'");
    if (c == '\\') {
      ++pos_;
      const char e = peek();
      ++pos_;
      if (const std::string s = shorthand(e); !s.empty()) return "[" + s + "]";
      if (e == 'D' || e == 'W' || e == 'S')
        return std::string("[^") + shorthand(static_cast<char>(e + 32)) + "\"\\\\\\x00-\\x1F]";
      if (e == 'n') return json_char('\n');
      if (e == 't') return json_char('\t');
      if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9') || e == '\0')
        fail(std::string("the escape \\") + e + " is not supported");
      return json_char(static_cast<unsigned char>(e));
    }
    return json_char(literal_char());
  }

  std::string char_class() {
    ++pos_;  // '['
    const bool negated = peek() == '^';
    if (negated) ++pos_;
    std::string out = negated ? "[^" : "[";
    bool first = true;
    while (first || peek() != ']') {
      first = false;
      if (at_end()) fail("unterminated character class");
      if (peek() == '\\') {
        ++pos_;
        const char e = peek();
        ++pos_;
        if (const std::string s = shorthand(e); !s.empty()) {
          out += s;
          continue;
        }
        if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9') || e == '\0')
          fail(std::string("the escape \\") + e + " is not supported in a class");
        out += class_char(static_cast<unsigned char>(e));
        check_plain(static_cast<unsigned char>(e), negated);
        continue;
      }
      const char32_t lo = literal_char();
      check_plain(lo, negated);
      out += class_char(lo);
      if (peek() == '-' && pos_ + 1 < p_.size() && p_[pos_ + 1] != ']') {
        ++pos_;
        const char32_t hi = literal_char();
        if (hi < lo) fail("the class range ends before it starts");
        if (lo <= '"' && hi >= '"') fail("a class range over '\"' is not supported");
        if (lo <= '\\' && hi >= '\\') fail("a class range over '\\' is not supported");
        out += '-';
        out += class_char(hi);
      }
    }
    ++pos_;
    // A negated class must still leave out what JSON escapes.
    if (negated) out += "\"\\\\\\x00-\\x1F";
    return out + "]";
  }

  void check_plain(char32_t cp, bool negated) const {
    if (!negated && (cp == '"' || cp == '\\' || cp < 0x20))
      fail("a class holding '\"', '\\' or a control character is not supported");
  }

  std::string_view p_;
  std::string where_;
  std::size_t pos_ = 0;
};

}  // namespace

std::string regex_to_gbnf(std::string_view pattern, const std::string& where) {
  return RegexCompiler(pattern, where).compile();
}

}  // namespace lamina::model::grammar
