// Splits a chat template into tokens with Jinja's whitespace control, set up
// as transformers sets it: trim_blocks and lstrip_blocks on, the template's
// final newline dropped, `{%-`/`-%}` stripping and `{%+`/`+%}` opting out.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lamina::model::jinja {

struct SourceLocation {
  int line = 0;
  int column = 0;  // in code points, from 1
};

// "3:14"
std::string to_string(SourceLocation where);
// Throws ChatTemplateError (Kind::Syntax) naming the line and column.
[[noreturn]] void throw_syntax_error(SourceLocation where, std::string_view message);

enum class TokenKind {
  Text,           // template data between tags
  VariableBegin,  // {{
  VariableEnd,    // }}
  BlockBegin,     // {%
  BlockEnd,       // %}
  Name,
  String,  // text holds the decoded literal
  Integer,
  Float,
  Operator,
  End,
};

struct Token {
  TokenKind kind = TokenKind::End;
  std::string text;  // data, name, operator, or a string literal's value
  int64_t integer = 0;
  double number = 0;
  SourceLocation where;
};

// Comments are dropped and {% raw %} blocks become text. Throws
// ChatTemplateError for unterminated tags, strings or comments.
std::vector<Token> tokenize(std::string_view source);

}  // namespace lamina::model::jinja
