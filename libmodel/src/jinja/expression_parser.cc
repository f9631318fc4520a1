#include "jinja/expression_parser.h"

#include <algorithm>

namespace lamina::model::jinja {
namespace {

template <typename Node>
ExprPtr make_expr(SourceLocation where, Node node) {
  auto e = std::make_unique<Expr>();
  e->where = where;
  e->node = std::move(node);
  return e;
}

std::string describe(const Token& t) {
  switch (t.kind) {
    case TokenKind::Text:
      return "template text";
    case TokenKind::VariableBegin:
      return "'{{'";
    case TokenKind::VariableEnd:
      return "end of print statement '}}'";
    case TokenKind::BlockBegin:
      return "'{%'";
    case TokenKind::BlockEnd:
      return "end of statement block '%}'";
    case TokenKind::String:
      return "string literal";
    case TokenKind::Integer:
    case TokenKind::Float:
      return "number " + t.text;
    case TokenKind::End:
      return "end of template";
    default:
      return quote_name(t.text);
  }
}

}  // namespace

void ExpressionParser::unexpected(const std::string& wanted) const {
  fail("expected " + wanted + ", got " + describe(cur()));
}

ExprPtr ExpressionParser::parse_tuple(bool with_conditional, bool parenthesized) {
  const SourceLocation where = cur().where;
  std::vector<ExprPtr> items;
  bool is_tuple = false;
  while (true) {
    if (!items.empty()) expect_op(",");
    if (cur().kind == TokenKind::VariableEnd || cur().kind == TokenKind::BlockEnd || is_op(")")) break;
    items.push_back(parse_expression(with_conditional));
    if (!is_op(",")) break;
    is_tuple = true;
  }
  if (!is_tuple) {
    if (items.empty()) {
      if (!parenthesized) unexpected("an expression");
      return make_expr(where, ListExpr{{}, true});
    }
    return std::move(items.front());
  }
  return make_expr(where, ListExpr{std::move(items), true});
}

ExprPtr ExpressionParser::parse_expression(bool with_conditional) {
  return with_conditional ? parse_conditional() : parse_or();
}

ExprPtr ExpressionParser::parse_conditional() {
  Nesting nesting(*this, false);
  ExprPtr e = parse_or();
  while (is_name("if")) {
    const SourceLocation where = cur().where;
    advance();
    ExprPtr condition = parse_or();
    ExprPtr otherwise;
    if (is_name("else")) {
      advance();
      nesting.deeper();
      otherwise = parse_conditional();
    }
    e = make_expr(where, ConditionalExpr{std::move(condition), std::move(e), std::move(otherwise)});
    nesting.chained();
  }
  return e;
}

ExprPtr ExpressionParser::parse_or() {
  Nesting nesting(*this, false);
  ExprPtr e = parse_and();
  while (is_name("or")) {
    const SourceLocation where = cur().where;
    advance();
    e = make_expr(where, BinaryExpr{BinaryOp::Or, std::move(e), parse_and()});
    nesting.chained();
  }
  return e;
}

ExprPtr ExpressionParser::parse_and() {
  Nesting nesting(*this, false);
  ExprPtr e = parse_not();
  while (is_name("and")) {
    const SourceLocation where = cur().where;
    advance();
    e = make_expr(where, BinaryExpr{BinaryOp::And, std::move(e), parse_not()});
    nesting.chained();
  }
  return e;
}

ExprPtr ExpressionParser::parse_not() {
  if (is_name("not")) {
    Nesting nesting(*this);
    const SourceLocation where = cur().where;
    advance();
    return make_expr(where, UnaryExpr{UnaryOp::Not, parse_not()});
  }
  return parse_compare();
}

ExprPtr ExpressionParser::parse_compare() {
  const SourceLocation where = cur().where;
  ExprPtr first = parse_math1();
  CompareExpr c;
  while (true) {
    CompareOp op;
    if (cur().kind == TokenKind::Operator && (cur().text == "==" || cur().text == "!=" || cur().text == "<" ||
                                              cur().text == "<=" || cur().text == ">" || cur().text == ">=")) {
      const std::string& t = cur().text;
      op = t == "=="   ? CompareOp::Eq
           : t == "!=" ? CompareOp::Ne
           : t == "<"  ? CompareOp::Lt
           : t == "<=" ? CompareOp::Le
           : t == ">"  ? CompareOp::Gt
                       : CompareOp::Ge;
      advance();
    } else if (is_name("in")) {
      op = CompareOp::In;
      advance();
    } else if (is_name("not") && peek().kind == TokenKind::Name && peek().text == "in") {
      op = CompareOp::NotIn;
      advance();
      advance();
    } else {
      break;
    }
    c.rest.emplace_back(op, parse_math1());
  }
  if (c.rest.empty()) return first;
  c.first = std::move(first);
  return make_expr(where, std::move(c));
}

ExprPtr ExpressionParser::parse_binary_chain(ExprPtr (ExpressionParser::*next)(),
                                             std::initializer_list<std::pair<std::string_view, BinaryOp>> ops) {
  Nesting nesting(*this, false);
  ExprPtr e = (this->*next)();
  while (true) {
    const auto match = std::find_if(ops.begin(), ops.end(), [&](const auto& o) { return is_op(o.first); });
    if (match == ops.end()) return e;
    const SourceLocation where = cur().where;
    advance();
    e = make_expr(where, BinaryExpr{match->second, std::move(e), (this->*next)()});
    nesting.chained();
  }
}

ExprPtr ExpressionParser::parse_math1() {
  return parse_binary_chain(&ExpressionParser::parse_concat, {{"+", BinaryOp::Add}, {"-", BinaryOp::Sub}});
}
ExprPtr ExpressionParser::parse_concat() {
  return parse_binary_chain(&ExpressionParser::parse_math2, {{"~", BinaryOp::Concat}});
}
ExprPtr ExpressionParser::parse_math2() {
  return parse_binary_chain(
      &ExpressionParser::parse_pow,
      {{"*", BinaryOp::Mul}, {"/", BinaryOp::Div}, {"//", BinaryOp::FloorDiv}, {"%", BinaryOp::Mod}});
}
ExprPtr ExpressionParser::parse_pow() {
  return parse_binary_chain(&ExpressionParser::parse_unary_filtered, {{"**", BinaryOp::Pow}});
}
ExprPtr ExpressionParser::parse_unary_filtered() { return parse_unary(true); }

ExprPtr ExpressionParser::parse_unary(bool with_filter) {
  Nesting nesting(*this);
  const SourceLocation where = cur().where;
  ExprPtr e;
  if (is_op("-") || is_op("+")) {
    const UnaryOp op = is_op("-") ? UnaryOp::Neg : UnaryOp::Pos;
    advance();
    e = make_expr(where, UnaryExpr{op, parse_unary(false)});
  } else {
    e = parse_primary();
  }
  e = parse_postfix(std::move(e), nesting);
  if (with_filter) e = parse_filters(std::move(e), nesting);
  return e;
}

ExprPtr ExpressionParser::parse_primary() {
  const Token& tok = cur();
  const SourceLocation where = tok.where;
  switch (tok.kind) {
    case TokenKind::Name: {
      const std::string name = tok.text;
      advance();
      if (name == "true" || name == "True") return make_expr(where, LiteralExpr{Value::boolean(true)});
      if (name == "false" || name == "False") return make_expr(where, LiteralExpr{Value::boolean(false)});
      if (name == "none" || name == "None") return make_expr(where, LiteralExpr{Value::none()});
      return make_expr(where, NameExpr{name});
    }
    case TokenKind::String: {
      std::string s;
      while (cur().kind == TokenKind::String) {
        s += cur().text;
        advance();
      }
      return make_expr(where, LiteralExpr{Value::string(std::move(s))});
    }
    case TokenKind::Integer:
      advance();
      return make_expr(where, LiteralExpr{Value::integer(tok.integer)});
    case TokenKind::Float:
      advance();
      return make_expr(where, LiteralExpr{Value::number(tok.number)});
    default:
      break;
  }
  if (is_op("(")) {
    advance();
    ExprPtr e = parse_tuple(true, true);
    expect_op(")");
    return e;
  }
  if (is_op("[")) {
    advance();
    ListExpr list;
    while (!is_op("]")) {
      if (!list.items.empty()) {
        expect_op(",");
        if (is_op("]")) break;
      }
      list.items.push_back(parse_expression(true));
    }
    advance();
    return make_expr(where, std::move(list));
  }
  if (is_op("{")) {
    advance();
    DictExpr dict;
    while (!is_op("}")) {
      if (!dict.entries.empty()) {
        expect_op(",");
        if (is_op("}")) break;
      }
      ExprPtr key = parse_expression(true);
      expect_op(":");
      dict.entries.emplace_back(std::move(key), parse_expression(true));
    }
    advance();
    return make_expr(where, std::move(dict));
  }
  unexpected("an expression");
}

ExprPtr ExpressionParser::parse_postfix(ExprPtr e, Nesting& nesting) {
  while (true) {
    const SourceLocation where = cur().where;
    if (is_op(".")) {
      advance();
      if (cur().kind == TokenKind::Name) {
        e = make_expr(where, AttributeExpr{std::move(e), cur().text});
      } else if (cur().kind == TokenKind::Integer) {
        e = make_expr(where, ItemExpr{std::move(e), make_expr(where, LiteralExpr{Value::integer(cur().integer)})});
      } else {
        unexpected("an attribute name");
      }
      advance();
    } else if (is_op("[")) {
      e = parse_subscript(std::move(e));
    } else if (is_op("(")) {
      e = make_expr(where, CallExpr{std::move(e), parse_call_args()});
    } else {
      return e;
    }
    nesting.chained();
  }
}

ExprPtr ExpressionParser::parse_subscript(ExprPtr object) {
  const SourceLocation where = cur().where;
  advance();
  ExprPtr start, stop, step;
  if (!is_op(":")) {
    start = parse_expression(true);
    if (!is_op(":")) {
      expect_op("]");
      return make_expr(where, ItemExpr{std::move(object), std::move(start)});
    }
  }
  advance();  // the first ':'
  if (!is_op("]") && !is_op(":")) stop = parse_expression(true);
  if (is_op(":")) {
    advance();
    if (!is_op("]")) step = parse_expression(true);
  }
  expect_op("]");
  return make_expr(where, SliceExpr{std::move(object), std::move(start), std::move(stop), std::move(step)});
}

Arguments ExpressionParser::parse_call_args() {
  expect_op("(");
  Arguments args;
  bool first = true;
  while (!is_op(")")) {
    if (!first) {
      expect_op(",");
      if (is_op(")")) break;
    }
    first = false;
    if (is_op("*") || is_op("**")) fail("*args and **kwargs are not supported");
    if (cur().kind == TokenKind::Name && peek().kind == TokenKind::Operator && peek().text == "=") {
      std::string name = cur().text;
      advance();
      advance();
      args.named.emplace_back(std::move(name), parse_expression(true));
    } else {
      if (!args.named.empty()) fail("a positional argument follows a keyword argument");
      args.positional.push_back(parse_expression(true));
    }
  }
  advance();
  return args;
}

ExprPtr ExpressionParser::parse_filters(ExprPtr e, Nesting& nesting) {
  while (true) {
    const SourceLocation where = cur().where;
    if (is_op("|")) {
      advance();
      FilterCall f = parse_filter_call();
      e = make_expr(f.where, FilterExpr{std::move(e), std::move(f.name), std::move(f.args)});
    } else if (is_name("is")) {
      advance();
      e = parse_test(std::move(e), where);
    } else if (is_op("(")) {
      e = make_expr(where, CallExpr{std::move(e), parse_call_args()});
    } else {
      return e;
    }
    nesting.chained();
  }
}

ExprPtr ExpressionParser::parse_test(ExprPtr operand, SourceLocation where) {
  TestExpr t;
  t.operand = std::move(operand);
  if (is_name("not")) {
    t.negated = true;
    advance();
  }
  t.name = expect_name();
  if (is_op("(")) {
    t.args = parse_call_args();
  } else if ((cur().kind == TokenKind::Name || cur().kind == TokenKind::String || cur().kind == TokenKind::Integer ||
              cur().kind == TokenKind::Float || is_op("[") || is_op("{")) &&
             !is_name("else") && !is_name("or") && !is_name("and")) {
    if (is_name("is")) fail("tests cannot be chained with 'is'");
    Nesting nesting(*this);
    t.args.positional.push_back(parse_postfix(parse_primary(), nesting));
  }
  return make_expr(where, std::move(t));
}

FilterCall ExpressionParser::parse_filter_call() {
  FilterCall f;
  f.where = cur().where;
  f.name = expect_name();
  if (is_op("(")) f.args = parse_call_args();
  return f;
}

}  // namespace lamina::model::jinja
