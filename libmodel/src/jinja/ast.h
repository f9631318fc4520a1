// The parsed form of a template: expressions and statements, each with the
// place in the source it came from. Immutable once parsed, so one template
// can be rendered from several threads.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "jinja/lexer.h"
#include "jinja/value.h"

namespace lamina::model::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Arguments {
  std::vector<ExprPtr> positional;
  std::vector<std::pair<std::string, ExprPtr>> named;
};

enum class BinaryOp { Add, Sub, Mul, Div, FloorDiv, Mod, Pow, Concat, And, Or };
enum class UnaryOp { Not, Neg, Pos };
enum class CompareOp { Eq, Ne, Lt, Le, Gt, Ge, In, NotIn };

struct LiteralExpr {
  Value value;
};
struct NameExpr {
  std::string name;
};
struct ListExpr {
  std::vector<ExprPtr> items;
  bool is_tuple = false;
};
struct DictExpr {
  std::vector<std::pair<ExprPtr, ExprPtr>> entries;
};
struct UnaryExpr {
  UnaryOp op;
  ExprPtr operand;
};
struct BinaryExpr {
  BinaryOp op;
  ExprPtr left, right;
};
struct CompareExpr {
  ExprPtr first;
  std::vector<std::pair<CompareOp, ExprPtr>> rest;  // a < b < c chains
};
struct AttributeExpr {
  ExprPtr object;
  std::string name;
};
struct ItemExpr {
  ExprPtr object;
  ExprPtr index;
};
struct SliceExpr {
  ExprPtr object;
  ExprPtr start, stop, step;  // each may be null
};
struct CallExpr {
  ExprPtr callee;
  Arguments args;
};
struct FilterExpr {
  ExprPtr operand;
  std::string name;
  Arguments args;
};
struct TestExpr {
  ExprPtr operand;
  std::string name;
  bool negated = false;
  Arguments args;
};
struct ConditionalExpr {
  ExprPtr condition, then, otherwise;  // otherwise may be null (undefined)
};

struct Expr {
  SourceLocation where;
  std::variant<LiteralExpr, NameExpr, ListExpr, DictExpr, UnaryExpr, BinaryExpr, CompareExpr, AttributeExpr, ItemExpr,
               SliceExpr, CallExpr, FilterExpr, TestExpr, ConditionalExpr>
      node;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using StmtList = std::vector<StmtPtr>;

// What a `set` or `for` assigns to: names (several unpack a sequence), or
// one namespace attribute (`ns.found`).
struct AssignTarget {
  std::vector<std::string> names;
  std::string attribute;  // set: the namespace is names[0]
};

struct FilterCall {
  std::string name;
  Arguments args;
  SourceLocation where;
};

struct TextStmt {
  std::string text;
};
struct OutputStmt {
  ExprPtr expr;
};
struct IfStmt {
  std::vector<std::pair<ExprPtr, StmtList>> branches;  // if, then each elif
  StmtList otherwise;
};
struct ForStmt {
  AssignTarget target;
  ExprPtr iterable;
  ExprPtr condition;  // `for x in xs if cond`; may be null
  StmtList body, otherwise;
};
struct SetStmt {
  AssignTarget target;
  ExprPtr value;                    // null for a block set
  StmtList body;                    // {% set x %}...{% endset %}
  std::vector<FilterCall> filters;  // {% set x | trim %}
};
struct MacroStmt {
  std::string name;
  std::vector<std::string> params;
  std::vector<ExprPtr> defaults;  // per param; null where none
  StmtList body;
};
struct FilterBlockStmt {
  std::vector<FilterCall> filters;
  StmtList body;
};
struct BlockStmt {  // {% generation %}: rendered as is
  StmtList body;
};
struct BreakStmt {};
struct ContinueStmt {};

struct Stmt {
  SourceLocation where;
  std::variant<TextStmt, OutputStmt, IfStmt, ForStmt, SetStmt, MacroStmt, FilterBlockStmt, BlockStmt, BreakStmt,
               ContinueStmt>
      node;
};

}  // namespace lamina::model::jinja
