// The token cursor and the expression grammar of Jinja, with its operator
// precedence; the statement parser (parser.cc) builds on it.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jinja/ast.h"
#include "jinja/parser.h"

namespace lamina::model::jinja {

class ExpressionParser {
 public:
  explicit ExpressionParser(std::vector<Token> tokens) : t_(std::move(tokens)) {}

 protected:
  // Bounds the recursion of the parser (blocks and sub-expressions: every
  // cycle of the descent passes parse_unary or parse_body, which count a level
  // on entry) and the height of the tree it builds, which operator chains
  // (a + b + c, x.a.b.c) also raise one level per operand.
  class Nesting {
   public:
    explicit Nesting(ExpressionParser& p, bool enter = true) : p_(p) {
      if (enter) deeper();
    }
    ~Nesting() {
      p_.depth_ -= levels_;
      p_.height_ -= levels_ + links_;
    }
    Nesting(const Nesting&) = delete;
    Nesting& operator=(const Nesting&) = delete;
    void deeper() {
      ++levels_;
      ++p_.depth_;
      ++p_.height_;
      check();
    }
    void chained() {
      ++links_;
      ++p_.height_;
      check();
    }

   private:
    void check() const {
      if (p_.depth_ > kMaxParseDepth || p_.height_ > kMaxExpressionHeight)
        throw_syntax_error(p_.cur().where, "the template nests deeper than " + std::to_string(kMaxParseDepth) +
                                               " levels (or chains more than " + std::to_string(kMaxExpressionHeight) +
                                               " operations)");
    }
    ExpressionParser& p_;
    int levels_ = 0;
    int links_ = 0;
  };

  const Token& cur() const { return t_[i_]; }
  const Token& peek(std::size_t k = 1) const { return t_[std::min(i_ + k, t_.size() - 1)]; }
  void advance() {
    if (i_ + 1 < t_.size()) ++i_;
  }
  bool is_op(std::string_view op) const { return cur().kind == TokenKind::Operator && cur().text == op; }
  bool is_name(std::string_view name) const { return cur().kind == TokenKind::Name && cur().text == name; }
  [[noreturn]] void fail(const std::string& message) const { throw_syntax_error(cur().where, message); }
  [[noreturn]] void unexpected(const std::string& wanted) const;
  void expect_op(std::string_view op) {
    if (!is_op(op)) unexpected(quote_name(op));
    advance();
  }
  std::string expect_name() {
    if (cur().kind != TokenKind::Name) unexpected("a name");
    std::string name = cur().text;
    advance();
    return name;
  }
  void expect_block_end() {
    if (cur().kind != TokenKind::BlockEnd) unexpected("end of statement block '%}'");
    advance();
  }

  // An expression, or a tuple where commas separate several.
  ExprPtr parse_tuple(bool with_conditional, bool parenthesized);
  ExprPtr parse_expression(bool with_conditional);
  Arguments parse_call_args();
  // name(args) after `|` or in {% filter %}.
  FilterCall parse_filter_call();

 private:
  ExprPtr parse_conditional();
  ExprPtr parse_or();
  ExprPtr parse_and();
  ExprPtr parse_not();
  ExprPtr parse_compare();
  ExprPtr parse_binary_chain(ExprPtr (ExpressionParser::*next)(),
                             std::initializer_list<std::pair<std::string_view, BinaryOp>> ops);
  ExprPtr parse_math1();
  ExprPtr parse_concat();
  ExprPtr parse_math2();
  ExprPtr parse_pow();
  ExprPtr parse_unary_filtered();
  ExprPtr parse_unary(bool with_filter);
  ExprPtr parse_primary();
  ExprPtr parse_postfix(ExprPtr e, Nesting& nesting);
  ExprPtr parse_subscript(ExprPtr object);
  ExprPtr parse_filters(ExprPtr e, Nesting& nesting);
  ExprPtr parse_test(ExprPtr operand, SourceLocation where);

  std::vector<Token> t_;
  std::size_t i_ = 0;
  int depth_ = 0;
  int height_ = 0;
};

}  // namespace lamina::model::jinja
