#include "jinja/lexer.h"

#include <charconv>
#include <cstdlib>

#include "jinja/text.h"
#include "lamina/model/chat_template.h"
#include "utf8.h"

namespace lamina::model::jinja {
namespace {

bool is_ascii_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || static_cast<unsigned char>(c) >= 0x80;
}
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

// Python's str.rstrip(): whitespace, Unicode spaces included.
std::string_view rstrip_whitespace(std::string_view s) {
  const std::u32string cps = text::decode(s);
  std::size_t keep = cps.size();
  while (keep > 0 && text::is_space(cps[keep - 1])) --keep;
  return s.substr(0, text::encode(std::u32string_view(cps).substr(0, keep)).size());
}

// Jinja reads the template as lines joined with "\n" ("\r\n" and "\r" become
// "\n"), and without keep_trailing_newline the last line break is dropped.
std::string normalize_newlines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (std::size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out.push_back('\n');
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out.push_back(source[i]);
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

constexpr std::string_view kOperators[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*", "%", "~", "[",
                                           "]",  "(",  ")",  "{",  "}",  ">",  "<", "=", ".", ":", "|", ",", ";"};

class Lexer {
 public:
  explicit Lexer(std::string_view src) : src_(src) {}

  std::vector<Token> run() {
    while (pos_ < src_.size()) {
      const std::size_t open = find_tag(pos_);
      if (open == std::string_view::npos) {
        emit_text(src_.substr(pos_), pos_);
        break;
      }
      const char kind = src_[open + 1];
      const char modifier = open + 2 < src_.size() ? src_[open + 2] : '\0';
      std::string_view before = src_.substr(pos_, open - pos_);
      if (modifier == '-') {
        before = rstrip_whitespace(before);
      } else if (modifier != '+' && kind != '{') {
        before = lstrip_line(before);
      }
      emit_text(before, pos_);
      const std::size_t body = open + 2 + (modifier == '-' || modifier == '+' ? 1 : 0);
      if (kind == '#') {
        lex_comment(open, body);
      } else if (std::size_t raw_body = 0; kind == '%' && raw_begin(body, raw_body)) {
        lex_raw(open, raw_body);
      } else {
        lex_tag(kind == '%', open, body);
      }
    }
    Token end;
    end.kind = TokenKind::End;
    end.where = at(src_.size());
    tokens_.push_back(end);
    return std::move(tokens_);
  }

 private:
  // Tokens come in source order, so the column is counted on from the last
  // location asked for rather than from the start of the line.
  SourceLocation at(std::size_t offset) {
    if (offset < located_offset_) located_offset_ = 0, located_ = {1, 1};
    for (std::size_t i = located_offset_; i < offset; ++i) {
      if (src_[i] == '\n') {
        ++located_.line;
        located_.column = 1;
      } else if (!utf8::is_continuation(static_cast<unsigned char>(src_[i]))) {
        ++located_.column;
      }
    }
    located_offset_ = offset;
    return located_;
  }

  std::size_t find_tag(std::size_t from) const {
    for (std::size_t i = src_.find('{', from); i != std::string_view::npos; i = src_.find('{', i + 1)) {
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    }
    return std::string_view::npos;
  }

  bool starts_with(std::size_t p, std::string_view s) const { return src_.substr(p, s.size()) == s; }

  std::size_t skip_whitespace(std::size_t p) const {
    while (p < src_.size() && is_ascii_space(src_[p])) ++p;
    return p;
  }

  // lstrip_blocks: spaces and tabs between the start of a line and a block tag go.
  std::string_view lstrip_line(std::string_view text) const {
    const std::size_t nl = text.rfind('\n');
    const std::size_t line_start = nl == std::string_view::npos ? 0 : nl + 1;
    if (line_start == 0 && !line_starting_) return text;
    for (char c : text.substr(line_start))
      if (c != ' ' && c != '\t') return text;
    return text.substr(0, line_start);
  }

  void emit_text(std::string_view text, std::size_t offset) {
    if (text.empty()) return;
    Token t;
    t.kind = TokenKind::Text;
    t.text = std::string(text);
    t.where = at(offset);
    tokens_.push_back(std::move(t));
  }

  // After a closing "-%}", "+%}" or "%}" (and the same for comments): strip,
  // keep, or drop one newline (trim_blocks).
  std::size_t after_block_end(std::size_t close, char modifier, std::size_t width) {
    std::size_t p = close + width;
    if (modifier == '-') {
      p = skip_whitespace(p);
    } else if (modifier != '+' && p < src_.size() && src_[p] == '\n') {
      ++p;
    }
    line_starting_ = p > close && src_[p - 1] == '\n';
    return p;
  }

  void lex_comment(std::size_t open, std::size_t body) {
    const std::size_t close = src_.find("#}", body);
    if (close == std::string_view::npos) throw_syntax_error(at(open), "the comment is not closed with '#}'");
    const char modifier = close > body && (src_[close - 1] == '-' || src_[close - 1] == '+') ? src_[close - 1] : '\0';
    pos_ = after_block_end(close, modifier, 2);
  }

  // {% raw %} or {%- raw -%}: sets `body` to where the verbatim text starts.
  bool raw_begin(std::size_t p, std::size_t& body) const {
    p = skip_whitespace(p);
    if (!starts_with(p, "raw")) return false;
    p = skip_whitespace(p + 3);
    if (starts_with(p, "-%}")) {
      body = skip_whitespace(p + 3);
      return true;
    }
    if (starts_with(p, "%}")) {
      body = p + 2;
      return true;
    }
    return false;
  }

  void lex_raw(std::size_t open, std::size_t body) {
    line_starting_ = body > 0 && src_[body - 1] == '\n';
    for (std::size_t tag = src_.find("{%", body); tag != std::string_view::npos; tag = src_.find("{%", tag + 1)) {
      const char modifier = tag + 2 < src_.size() ? src_[tag + 2] : '\0';
      std::size_t p = skip_whitespace(tag + 2 + (modifier == '-' || modifier == '+' ? 1 : 0));
      if (!starts_with(p, "endraw")) continue;
      p = skip_whitespace(p + 6);
      char end_modifier = '\0';
      if (starts_with(p, "-%}") || starts_with(p, "+%}")) {
        end_modifier = src_[p];
        ++p;
      } else if (!starts_with(p, "%}")) {
        continue;
      }
      std::string_view text = src_.substr(body, tag - body);
      if (modifier == '-') {
        text = rstrip_whitespace(text);
      } else if (modifier != '+') {
        text = lstrip_line(text);
      }
      emit_text(text, body);
      pos_ = after_block_end(p, end_modifier, 2);
      return;
    }
    throw_syntax_error(at(open), "the raw block is not closed with '{% endraw %}'");
  }

  void lex_tag(bool is_block, std::size_t open, std::size_t p) {
    push(is_block ? TokenKind::BlockBegin : TokenKind::VariableBegin, is_block ? "{%" : "{{", open);
    int depth = 0;
    while (true) {
      p = skip_whitespace(p);
      if (p >= src_.size())
        throw_syntax_error(at(open), std::string("the tag is not closed with '") + (is_block ? "%}'" : "}}'"));
      if (depth == 0) {
        const std::string_view close = is_block ? "%}" : "}}";
        const char c = src_[p];
        if ((c == '-' || (c == '+' && is_block)) && starts_with(p + 1, close)) {
          push(is_block ? TokenKind::BlockEnd : TokenKind::VariableEnd, std::string(close), p);
          pos_ = after_block_end(p + 1, c, 2);
          return;
        }
        if (starts_with(p, close)) {
          push(is_block ? TokenKind::BlockEnd : TokenKind::VariableEnd, std::string(close), p);
          pos_ = after_block_end(p, is_block ? '\0' : '+', 2);
          return;
        }
      }
      p = lex_token(p, depth);
    }
  }

  void push(TokenKind kind, std::string text, std::size_t offset) {
    Token t;
    t.kind = kind;
    t.text = std::move(text);
    t.where = at(offset);
    tokens_.push_back(std::move(t));
  }

  std::size_t lex_token(std::size_t p, int& depth) {
    const char c = src_[p];
    if (is_name_start(c)) {
      std::size_t e = p;
      while (e < src_.size() && is_name_char(src_[e])) ++e;
      push(TokenKind::Name, std::string(src_.substr(p, e - p)), p);
      return e;
    }
    if (is_digit(c)) return lex_number(p);
    if (c == '\'' || c == '"') return lex_string(p);
    for (std::string_view op : kOperators) {
      if (!starts_with(p, op)) continue;
      if (op == "(" || op == "[" || op == "{") ++depth;
      if (op == ")" || op == "]" || op == "}") {
        if (depth == 0) throw_syntax_error(at(p), "unexpected '" + std::string(op) + "'");
        --depth;
      }
      push(TokenKind::Operator, std::string(op), p);
      return p + op.size();
    }
    throw_syntax_error(at(p), "unexpected character '" + std::string(1, c) + "'");
  }

  std::size_t lex_number(std::size_t start) {
    const auto digits = [&](std::size_t p, auto accept) {
      while (p < src_.size() && (accept(src_[p]) || (src_[p] == '_' && p + 1 < src_.size() && accept(src_[p + 1]))))
        ++p;
      return p;
    };
    const auto decimal = [](char ch) { return is_digit(ch); };
    std::size_t p = digits(start, decimal);
    bool is_float = false;
    if (p + 1 < src_.size() && src_[p] == '.' && is_digit(src_[p + 1])) {
      p = digits(p + 1, decimal);
      is_float = true;
    }
    if (p < src_.size() && (src_[p] == 'e' || src_[p] == 'E')) {
      std::size_t q = p + 1;
      if (q < src_.size() && (src_[q] == '+' || src_[q] == '-')) ++q;
      if (q < src_.size() && is_digit(src_[q])) {
        p = digits(q, decimal);
        is_float = true;
      }
    }
    int base = 10;
    if (!is_float && src_[start] == '0' && start + 1 < src_.size()) {
      const char prefix = static_cast<char>(src_[start + 1] | 0x20);
      base = prefix == 'x' ? 16 : prefix == 'o' ? 8 : prefix == 'b' ? 2 : 10;
      if (base != 10) {
        const auto in_base = [base](char ch) {
          const int v = is_digit(ch)                                 ? ch - '0'
                        : ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'f') ? (ch | 0x20) - 'a' + 10
                                                                     : 99;
          return v < base;
        };
        std::size_t q = start + 2;
        if (q < src_.size() && src_[q] == '_') ++q;
        p = digits(q, in_base);
        if (p == q) throw_syntax_error(at(start), "malformed number literal");
      }
    }
    std::string literal;
    for (char ch : src_.substr(start, p - start))
      if (ch != '_') literal.push_back(ch);
    Token t;
    t.where = at(start);
    t.text = literal;
    if (is_float) {
      t.kind = TokenKind::Float;
      t.number = std::strtod(literal.c_str(), nullptr);
    } else {
      t.kind = TokenKind::Integer;
      const char* first = literal.data() + (base == 10 ? 0 : 2);
      const auto r = std::from_chars(first, literal.data() + literal.size(), t.integer, base);
      if (r.ec != std::errc()) throw_syntax_error(t.where, "integer literal out of range: " + literal);
    }
    tokens_.push_back(std::move(t));
    return p;
  }

  std::size_t lex_string(std::size_t start) {
    const char quote = src_[start];
    std::string value;
    std::size_t p = start + 1;
    while (true) {
      if (p >= src_.size()) throw_syntax_error(at(start), "the string literal is not closed");
      const char c = src_[p];
      if (c == quote) break;
      if (c != '\\' || p + 1 >= src_.size()) {
        value.push_back(c);
        ++p;
        continue;
      }
      p = unescape(p + 1, value);
    }
    Token t;
    t.kind = TokenKind::String;
    t.text = std::move(value);
    t.where = at(start);
    tokens_.push_back(std::move(t));
    return p + 1;
  }

  // Python's escapes in string literals; `p` is just after the backslash.
  std::size_t unescape(std::size_t p, std::string& out) {
    const char c = src_[p];
    const auto hex = [&](std::size_t from, int n) -> long {
      if (from + static_cast<std::size_t>(n) > src_.size()) return -1;
      long v = 0;
      for (int i = 0; i < n; ++i) {
        const char h = static_cast<char>(src_[from + static_cast<std::size_t>(i)] | 0x20);
        const int d = is_digit(h) ? h - '0' : (h >= 'a' && h <= 'f') ? h - 'a' + 10 : -1;
        if (d < 0) return -1;
        v = v * 16 + d;
      }
      return v;
    };
    switch (c) {
      case '\n':
        return p + 1;  // line continuation
      case '\\':
        out.push_back('\\');
        return p + 1;
      case '\'':
        out.push_back('\'');
        return p + 1;
      case '"':
        out.push_back('"');
        return p + 1;
      case 'a':
        out.push_back('\a');
        return p + 1;
      case 'b':
        out.push_back('\b');
        return p + 1;
      case 'f':
        out.push_back('\f');
        return p + 1;
      case 'n':
        out.push_back('\n');
        return p + 1;
      case 'r':
        out.push_back('\r');
        return p + 1;
      case 't':
        out.push_back('\t');
        return p + 1;
      case 'v':
        out.push_back('\v');
        return p + 1;
      case 'x':
      case 'u':
      case 'U': {
        const int n = c == 'x' ? 2 : c == 'u' ? 4 : 8;
        const long v = hex(p + 1, n);
        if (v < 0 || v > 0x10FFFF) throw_syntax_error(at(p - 1), std::string("malformed \\") + c + " escape");
        text::append_utf8(out, static_cast<char32_t>(v));
        return p + 1 + static_cast<std::size_t>(n);
      }
      default:
        if (c >= '0' && c <= '7') {
          int v = 0, n = 0;
          while (n < 3 && p < src_.size() && src_[p] >= '0' && src_[p] <= '7') v = v * 8 + (src_[p++] - '0'), ++n;
          text::append_utf8(out, static_cast<char32_t>(v));
          return p;
        }
        out.push_back('\\');  // unknown escapes stay as written
        return p;
    }
  }

  std::string_view src_;
  std::size_t pos_ = 0;
  bool line_starting_ = true;
  std::size_t located_offset_ = 0;
  SourceLocation located_{1, 1};
  std::vector<Token> tokens_;
};

}  // namespace

std::string to_string(SourceLocation where) { return std::to_string(where.line) + ":" + std::to_string(where.column); }

void throw_syntax_error(SourceLocation where, std::string_view message) {
  throw ChatTemplateError(ChatTemplateError::Kind::Syntax,
                          "chat template " + to_string(where) + ": " + std::string(message));
}

std::vector<Token> tokenize(std::string_view source) {
  const std::string normalized = normalize_newlines(source);
  std::vector<Token> tokens = Lexer(normalized).run();
  return tokens;
}

}  // namespace lamina::model::jinja
