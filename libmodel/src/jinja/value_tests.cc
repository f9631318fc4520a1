// Jinja's tests: `value is defined`, `value is string`, `value is divisibleby 3`...
#include <cmath>

#include "jinja/builtins.h"
#include "jinja/text.h"

namespace lamina::model::jinja {
namespace {

const Value& one_arg(const CallArgs& args, std::string_view test) {
  const Value* v = args.get(0, "other");
  if (!v || args.positional.size() + args.named.size() != 1)
    throw Error("the '" + std::string(test) + "' test takes exactly one argument");
  return *v;
}

void no_args(const CallArgs& args, std::string_view test) {
  if (!args.positional.empty() || !args.named.empty())
    throw Error("the '" + std::string(test) + "' test takes no arguments");
}

bool same_as(const Value& a, const Value& b) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::None:
    case Value::Kind::Undefined:
      return true;
    case Value::Kind::Bool:
      return a.as_bool() == b.as_bool();
    case Value::Kind::Int:
      return a.as_int() == b.as_int();
    case Value::Kind::Float:
      return a.as_float() == b.as_float();
    default:
      return a.identity() == b.identity();
  }
}

constexpr std::string_view kTests[] = {
    "defined", "undefined", "none",     "boolean",     "false",  "true",  "integer",     "float", "number", "string",
    "mapping", "iterable",  "sequence", "callable",    "sameas", "eq",    "equalto",     "==",    "ne",     "!=",
    "lt",      "lessthan",  "<",        "le",          "<=",     "gt",    "greaterthan", ">",     "ge",     ">=",
    "in",      "odd",       "even",     "divisibleby", "lower",  "upper", "escaped"};

}  // namespace

bool is_known_test(std::string_view name) {
  for (std::string_view t : kTests)
    if (t == name) return true;
  return false;
}

bool apply_test(std::string_view name, const Value& v, const CallArgs& args) {
  using K = Value::Kind;
  if (name == "defined" || name == "undefined") {
    no_args(args, name);
    return v.is_undefined() == (name == "undefined");
  }
  if (name == "none") return no_args(args, name), v.is_none();
  if (name == "boolean") return no_args(args, name), v.kind() == K::Bool;
  if (name == "true" || name == "false") {
    no_args(args, name);
    return v.kind() == K::Bool && v.as_bool() == (name == "true");
  }
  if (name == "integer") return no_args(args, name), v.kind() == K::Int;
  if (name == "float") return no_args(args, name), v.kind() == K::Float;
  if (name == "number") return no_args(args, name), v.is_number();
  if (name == "string") return no_args(args, name), v.is_string();
  if (name == "mapping") return no_args(args, name), v.kind() == K::Dict;
  if (name == "iterable" || name == "sequence") {
    no_args(args, name);
    return v.is_undefined() || v.is_string() || v.kind() == K::List || v.kind() == K::Dict;
  }
  // Undefined counts as callable, as in Jinja (calling it raises the undefined error).
  if (name == "callable") return no_args(args, name), v.kind() == K::Callable || v.is_undefined();
  if (name == "escaped") return no_args(args, name), false;
  if (name == "odd" || name == "even" || name == "divisibleby") {
    // Python's `value % n == 1` (odd) or `== 0`, floats included.
    const Value n = name == "divisibleby" ? one_arg(args, name) : (no_args(args, name), Value::integer(2));
    for (const Value* x : {&v, &n}) {
      if (x->is_undefined()) fail_undefined(*x);
      if (!x->is_number()) throw Error("the '" + std::string(name) + "' test needs numbers");
    }
    if (n.as_float() == 0.0) throw Error("integer division or modulo by zero");
    double rest = 0;
    if (v.is_int_like() && n.is_int_like()) {
      rest = static_cast<double>(((v.as_int() % n.as_int()) + n.as_int()) % n.as_int());
    } else {
      rest = std::fmod(v.as_float(), n.as_float());
      if (rest != 0.0 && (rest < 0) != (n.as_float() < 0)) rest += n.as_float();
    }
    return rest == (name == "odd" ? 1.0 : 0.0);
  }
  if (name == "lower" || name == "upper") {
    no_args(args, name);
    const std::string s = to_str(v);
    return name == "lower" ? text::is_lower(s) : text::is_upper(s);
  }
  if (name == "sameas") return same_as(v, one_arg(args, name));
  if (name == "eq" || name == "equalto" || name == "==") return equals(v, one_arg(args, name));
  if (name == "ne" || name == "!=") return !equals(v, one_arg(args, name));
  if (name == "lt" || name == "lessthan" || name == "<") return compare(v, one_arg(args, name)) < 0;
  if (name == "le" || name == "<=") return compare(v, one_arg(args, name)) <= 0;
  if (name == "gt" || name == "greaterthan" || name == ">") return compare(v, one_arg(args, name)) > 0;
  if (name == "ge" || name == ">=") return compare(v, one_arg(args, name)) >= 0;
  if (name == "in") return contains(one_arg(args, name), v);
  throw Unsupported("no test named '" + std::string(name) + "'");
}

}  // namespace lamina::model::jinja
