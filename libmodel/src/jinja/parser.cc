#include "jinja/parser.h"

#include <algorithm>
#include <initializer_list>

#include "jinja/expression_parser.h"

namespace lamina::model::jinja {
namespace {

constexpr std::string_view kEndTags[] = {"elif",     "else",      "endif",         "endfor", "endset",
                                         "endmacro", "endfilter", "endgeneration", "endraw"};
constexpr std::string_view kUnsupportedTags[] = {"include", "import", "from",       "extends", "block",    "call",
                                                 "with",    "do",     "autoescape", "trans",   "pluralize"};

template <typename Node>
StmtPtr make_stmt(SourceLocation where, Node node) {
  auto s = std::make_unique<Stmt>();
  s->where = where;
  s->node = std::move(node);
  return s;
}

// Statements, their blocks and their end tags, over the expression grammar.
class TemplateParser : public ExpressionParser {
 public:
  using ExpressionParser::ExpressionParser;

  StmtList parse_all() { return parse_body({}); }

 private:
  // Consumes `{% name %}` when the current token is that tag's name.
  void finish_end_tag() {
    advance();
    expect_block_end();
  }

  // Statements up to one of `terminators`; returns with the terminator's name
  // as the current token.
  StmtList parse_body(std::initializer_list<std::string_view> terminators);
  void parse_statement(StmtList& out, SourceLocation where);
  StmtPtr parse_if(SourceLocation where);
  StmtPtr parse_for(SourceLocation where);
  AssignTarget parse_target(bool allow_attribute);
  StmtPtr parse_set(SourceLocation where);
  StmtPtr parse_macro(SourceLocation where);
  StmtPtr parse_filter_block(SourceLocation where);

  int loop_depth_ = 0;
};

StmtList TemplateParser::parse_body(std::initializer_list<std::string_view> terminators) {
  Nesting nesting(*this);
  StmtList out;
  while (true) {
    const Token& tok = cur();
    switch (tok.kind) {
      case TokenKind::Text:
        out.push_back(make_stmt(tok.where, TextStmt{tok.text}));
        advance();
        break;
      case TokenKind::VariableBegin: {
        advance();
        ExprPtr e = parse_tuple(true, false);
        if (cur().kind != TokenKind::VariableEnd) unexpected("end of print statement '}}'");
        advance();
        out.push_back(make_stmt(tok.where, OutputStmt{std::move(e)}));
        break;
      }
      case TokenKind::BlockBegin: {
        advance();
        if (cur().kind != TokenKind::Name) unexpected("a tag name");
        if (std::find(terminators.begin(), terminators.end(), cur().text) != terminators.end()) return out;
        parse_statement(out, tok.where);
        break;
      }
      case TokenKind::End: {
        if (terminators.size() == 0) return out;
        std::string wanted;
        for (std::string_view t : terminators) wanted += (wanted.empty() ? "'" : " or '") + std::string(t) + "'";
        fail("unexpected end of template, expected " + wanted);
      }
      default:
        unexpected("a statement");
    }
  }
}

void TemplateParser::parse_statement(StmtList& out, SourceLocation where) {
  const std::string name = cur().text;
  if (name == "if") return out.push_back(parse_if(where));
  if (name == "for") return out.push_back(parse_for(where));
  if (name == "set") return out.push_back(parse_set(where));
  if (name == "macro") return out.push_back(parse_macro(where));
  if (name == "filter") return out.push_back(parse_filter_block(where));
  if (name == "break" || name == "continue") {
    if (loop_depth_ == 0) fail(quote_name(name) + " outside a loop");
    finish_end_tag();
    if (name == "break") return out.push_back(make_stmt(where, BreakStmt{}));
    return out.push_back(make_stmt(where, ContinueStmt{}));
  }
  if (name == "generation") {
    finish_end_tag();
    BlockStmt block{parse_body({"endgeneration"})};
    finish_end_tag();
    return out.push_back(make_stmt(where, std::move(block)));
  }
  if (std::find(std::begin(kEndTags), std::end(kEndTags), name) != std::end(kEndTags))
    fail("unexpected '" + name + "'");
  if (std::find(std::begin(kUnsupportedTags), std::end(kUnsupportedTags), name) != std::end(kUnsupportedTags))
    fail("the '" + name + "' tag is not supported in chat templates");
  fail("unknown tag '" + name + "'");
}

StmtPtr TemplateParser::parse_if(SourceLocation where) {
  advance();
  IfStmt s;
  ExprPtr condition = parse_tuple(false, false);
  expect_block_end();
  s.branches.emplace_back(std::move(condition), parse_body({"elif", "else", "endif"}));
  while (true) {
    const std::string tag = cur().text;
    advance();
    if (tag == "elif") {
      condition = parse_tuple(false, false);
      expect_block_end();
      s.branches.emplace_back(std::move(condition), parse_body({"elif", "else", "endif"}));
    } else if (tag == "else") {
      expect_block_end();
      s.otherwise = parse_body({"endif"});
      finish_end_tag();
      break;
    } else {
      expect_block_end();
      break;
    }
  }
  return make_stmt(where, std::move(s));
}

StmtPtr TemplateParser::parse_for(SourceLocation where) {
  advance();
  ForStmt s;
  s.target = parse_target(false);
  if (!is_name("in")) unexpected("'in'");
  advance();
  s.iterable = parse_tuple(false, false);
  if (is_name("if")) {
    advance();
    s.condition = parse_expression(true);
  }
  if (is_name("recursive")) fail("recursive loops are not supported");
  expect_block_end();
  ++loop_depth_;
  s.body = parse_body({"endfor", "else"});
  --loop_depth_;
  if (is_name("else")) {
    finish_end_tag();
    s.otherwise = parse_body({"endfor"});
  }
  finish_end_tag();
  return make_stmt(where, std::move(s));
}

AssignTarget TemplateParser::parse_target(bool allow_attribute) {
  AssignTarget target;
  if (allow_attribute && cur().kind == TokenKind::Name && peek().kind == TokenKind::Operator && peek().text == "." &&
      peek(2).kind == TokenKind::Name) {
    target.names.push_back(cur().text);
    advance();
    advance();
    target.attribute = expect_name();
    return target;
  }
  const bool parenthesized = is_op("(");
  if (parenthesized) advance();
  do {
    if (!target.names.empty()) advance();                               // the comma
    if (!target.names.empty() && cur().kind != TokenKind::Name) break;  // trailing comma
    const std::string name = expect_name();
    if (name == "true" || name == "false" || name == "none" || name == "True" || name == "False" || name == "None" ||
        name == "loop")
      fail("cannot assign to '" + name + "'");
    target.names.push_back(name);
  } while (is_op(","));
  if (parenthesized) expect_op(")");
  return target;
}

StmtPtr TemplateParser::parse_set(SourceLocation where) {
  advance();
  SetStmt s;
  s.target = parse_target(true);
  if (is_op("=")) {
    advance();
    s.value = parse_tuple(true, false);
    expect_block_end();
    return make_stmt(where, std::move(s));
  }
  if (s.target.names.size() > 1) unexpected("'='");
  while (is_op("|")) {
    advance();
    s.filters.push_back(parse_filter_call());
  }
  expect_block_end();
  s.body = parse_body({"endset"});
  finish_end_tag();
  return make_stmt(where, std::move(s));
}

StmtPtr TemplateParser::parse_macro(SourceLocation where) {
  advance();
  MacroStmt m;
  m.name = expect_name();
  expect_op("(");
  while (!is_op(")")) {
    if (!m.params.empty()) {
      expect_op(",");
      if (is_op(")")) break;
    }
    m.params.push_back(expect_name());
    if (is_op("=")) {
      advance();
      m.defaults.push_back(parse_expression(true));
    } else {
      if (!m.defaults.empty() && m.defaults.back()) fail("a parameter without a default follows one with a default");
      m.defaults.push_back(nullptr);
    }
  }
  advance();
  expect_block_end();
  const int saved_loop_depth = loop_depth_;
  loop_depth_ = 0;
  m.body = parse_body({"endmacro"});
  loop_depth_ = saved_loop_depth;
  finish_end_tag();
  return make_stmt(where, std::move(m));
}

StmtPtr TemplateParser::parse_filter_block(SourceLocation where) {
  advance();
  FilterBlockStmt s;
  s.filters.push_back(parse_filter_call());
  while (is_op("|")) {
    advance();
    s.filters.push_back(parse_filter_call());
  }
  expect_block_end();
  s.body = parse_body({"endfilter"});
  finish_end_tag();
  return make_stmt(where, std::move(s));
}

}  // namespace

StmtList parse_template(std::string_view source) { return TemplateParser(tokenize(source)).parse_all(); }

}  // namespace lamina::model::jinja
