// Python's operators, attribute and item access and slicing, as Jinja's
// sandbox applies them.
#include <algorithm>
#include <cmath>
#include <limits>

#include "jinja/builtins.h"
#include "jinja/text.h"

namespace lamina::model::jinja {
namespace {

[[noreturn]] void unsupported(std::string_view op, const Value& a, const Value& b) {
  throw Error("unsupported operand type(s) for " + std::string(op) + ": '" + type_name(a) + "' and '" + type_name(b) +
              "'");
}

[[noreturn]] void overflow() {
  throw Unsupported("integer overflow (Python integers are unbounded; this renderer uses 64 bits)");
}

int64_t add_int(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) overflow();
  return r;
}

int64_t sub_int(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_sub_overflow(a, b, &r)) overflow();
  return r;
}

int64_t mul_int(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) overflow();
  return r;
}

Value repeat(const Value& seq, int64_t times, Budget& budget) {
  times = std::max<int64_t>(times, 0);
  if (seq.is_string()) {
    const std::string& s = seq.as_string();
    if (!s.empty() && static_cast<uint64_t>(times) > kMaxStringBytes / s.size()) check_string_size(kMaxStringBytes + 1);
    std::string out;
    out.reserve(s.size() * static_cast<std::size_t>(times));
    for (int64_t i = 0; i < times; ++i) out += s;
    return Value::string(std::move(out));
  }
  const auto& items = seq.as_list().items;
  if (!items.empty() && static_cast<uint64_t>(times) > kMaxListItems / items.size())
    throw Error("list longer than " + std::to_string(kMaxListItems) + " items");
  budget.charge(items.size() * static_cast<std::size_t>(times));
  std::vector<Value> out;
  out.reserve(items.size() * static_cast<std::size_t>(times));
  for (int64_t i = 0; i < times; ++i) out.insert(out.end(), items.begin(), items.end());
  return Value::list(std::move(out), seq.as_list().is_tuple);
}

int64_t int_power(int64_t base, int64_t exponent) {
  int64_t result = 1;
  while (exponent > 0) {
    if (exponent & 1) result = mul_int(result, base);
    exponent >>= 1;
    if (exponent > 0) base = mul_int(base, base);
  }
  return result;
}

// Python's float // and %: the quotient rounds down and the remainder takes
// the divisor's sign.
double float_mod(double a, double b) {
  double mod = std::fmod(a, b);
  if (mod != 0.0) {
    if ((b < 0) != (mod < 0)) mod += b;
  } else {
    mod = std::copysign(0.0, b);
  }
  return mod;
}

double float_floor_div(double a, double b) {
  const double mod = std::fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0.0 && (b < 0) != (mod < 0)) div -= 1.0;
  if (div == 0.0) return std::copysign(0.0, a / b);
  double floor_div = std::floor(div);
  if (div - floor_div > 0.5) floor_div += 1.0;
  return floor_div;
}

Value arithmetic(BinaryOp op, const Value& a, const Value& b) {
  const bool ints = a.is_int_like() && b.is_int_like();
  switch (op) {
    case BinaryOp::Add:
      if (ints) return Value::integer(add_int(a.as_int(), b.as_int()));
      return Value::number(a.as_float() + b.as_float());
    case BinaryOp::Sub:
      if (ints) return Value::integer(sub_int(a.as_int(), b.as_int()));
      return Value::number(a.as_float() - b.as_float());
    case BinaryOp::Mul:
      if (ints) return Value::integer(mul_int(a.as_int(), b.as_int()));
      return Value::number(a.as_float() * b.as_float());
    case BinaryOp::Div:
      if (b.as_float() == 0.0) throw Error("division by zero");
      return Value::number(a.as_float() / b.as_float());
    case BinaryOp::FloorDiv:
    case BinaryOp::Mod: {
      if (ints ? b.as_int() == 0 : b.as_float() == 0.0) throw Error("integer division or modulo by zero");
      if (!ints) {
        return Value::number(op == BinaryOp::Mod ? float_mod(a.as_float(), b.as_float())
                                                 : float_floor_div(a.as_float(), b.as_float()));
      }
      const int64_t x = a.as_int(), y = b.as_int();
      if (x == std::numeric_limits<int64_t>::min() && y == -1) overflow();
      int64_t q = x / y, m = x % y;
      if (m != 0 && ((m < 0) != (y < 0))) {
        m += y;
        q -= 1;
      }
      return Value::integer(op == BinaryOp::Mod ? m : q);
    }
    case BinaryOp::Pow:
      if (ints && b.as_int() >= 0) return Value::integer(int_power(a.as_int(), b.as_int()));
      if (a.as_float() == 0.0 && b.as_float() < 0) throw Error("0.0 cannot be raised to a negative power");
      return Value::number(std::pow(a.as_float(), b.as_float()));
    default:
      break;
  }
  throw Error("not an arithmetic operator");
}

const char* op_symbol(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add:
      return "+";
    case BinaryOp::Sub:
      return "-";
    case BinaryOp::Mul:
      return "*";
    case BinaryOp::Div:
      return "/";
    case BinaryOp::FloorDiv:
      return "//";
    case BinaryOp::Mod:
      return "%";
    case BinaryOp::Pow:
      return "**";
    case BinaryOp::Concat:
      return "~";
    case BinaryOp::And:
      return "and";
    case BinaryOp::Or:
      return "or";
  }
  return "?";
}

Value bound_method(const Value& receiver, std::string_view name) {
  auto fn = std::make_shared<CallableData>();
  fn->kind = CallableData::Kind::Method;
  fn->name = std::string(name);
  fn->receiver = receiver;
  return Value::callable(std::move(fn));
}

// The sandbox refuses methods that would change a list or dict.
bool is_mutator(const Value& object, std::string_view name) {
  static constexpr std::string_view kListMutators[] = {"append", "extend",  "insert", "pop",
                                                       "remove", "reverse", "sort",   "clear"};
  static constexpr std::string_view kDictMutators[] = {"update", "pop", "popitem", "setdefault", "clear"};
  if (object.kind() == Value::Kind::List) {
    for (auto m : kListMutators)
      if (m == name) return true;
  }
  if (object.kind() == Value::Kind::Dict) {
    for (auto m : kDictMutators)
      if (m == name) return true;
  }
  return false;
}

Value no_attribute(const Value& object, std::string_view name) {
  std::string why = quote_name(object.is_none() ? "None" : type_name(object) + " object");
  why.append(" has no attribute '").append(name).append("'");
  return Value::undefined(std::move(why));
}

Value loop_field(const Value& object, std::string_view name) {
  const LoopData& l = object.as_loop();
  if (name == "index") return Value::integer(l.index0 + 1);
  if (name == "index0") return Value::integer(l.index0);
  if (name == "revindex") return Value::integer(l.length - l.index0);
  if (name == "revindex0") return Value::integer(l.length - l.index0 - 1);
  if (name == "first") return Value::boolean(l.index0 == 0);
  if (name == "last") return Value::boolean(l.index0 + 1 == l.length);
  if (name == "length") return Value::integer(l.length);
  if (name == "previtem") return l.previous;
  if (name == "nextitem") return l.next;
  if (name == "depth") return Value::integer(1);
  if (name == "depth0") return Value::integer(0);
  if (name == "cycle") return bound_method(object, name);
  return no_attribute(object, name);
}

// Python's slice index rules for a sequence of length n.
int64_t slice_bound(const Value* v, int64_t n, int64_t step, bool is_start) {
  if (!v || v->is_none()) {
    if (step > 0) return is_start ? 0 : n;
    return is_start ? n - 1 : -1;
  }
  if (!v->is_int_like()) throw Error("slice indices must be integers or None");
  int64_t i = v->as_int();
  if (i < 0) i += n;
  if (step > 0) return std::clamp<int64_t>(i, 0, n);
  return std::clamp<int64_t>(i, -1, n - 1);
}

}  // namespace

Value binary_op(BinaryOp op, const Value& a, const Value& b, Budget& budget) {
  if (op == BinaryOp::Concat) {
    std::string s = to_str(a);
    const std::string right = to_str(b);
    check_string_size(s.size() + right.size());
    return Value::string(s + right);
  }
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  if (a.is_number() && b.is_number()) return arithmetic(op, a, b);
  if (op == BinaryOp::Add) {
    if (a.is_string() && b.is_string()) {
      check_string_size(a.as_string().size() + b.as_string().size());
      return Value::string(a.as_string() + b.as_string());
    }
    if (a.kind() == Value::Kind::List && b.kind() == Value::Kind::List &&
        a.as_list().is_tuple == b.as_list().is_tuple) {
      std::vector<Value> items = a.as_list().items;
      items.insert(items.end(), b.as_list().items.begin(), b.as_list().items.end());
      budget.charge(items.size());
      return Value::list(std::move(items), a.as_list().is_tuple);
    }
  }
  if (op == BinaryOp::Mul) {
    const bool a_seq = a.is_string() || a.kind() == Value::Kind::List;
    const bool b_seq = b.is_string() || b.kind() == Value::Kind::List;
    if (a_seq && b.is_int_like()) return repeat(a, b.as_int(), budget);
    if (b_seq && a.is_int_like()) return repeat(b, a.as_int(), budget);
  }
  if (op == BinaryOp::Mod && a.is_string()) throw Unsupported("printf-style string formatting with % is not supported");
  unsupported(op_symbol(op), a, b);
}

Value negate(const Value& v) {
  if (v.is_undefined()) fail_undefined(v);
  if (v.is_int_like()) {
    return Value::integer(sub_int(0, v.as_int()));
  }
  if (v.kind() == Value::Kind::Float) return Value::number(-v.as_float());
  throw Error("bad operand type for unary -: '" + type_name(v) + "'");
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::Undefined:
      return false;
    case Value::Kind::String:
      if (!item.is_string()) throw Error("'in <string>' requires string as left operand, not " + type_name(item));
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Value::Kind::List:
      for (const Value& v : container.as_list().items)
        if (equals(v, item)) return true;
      return false;
    case Value::Kind::Dict:
      if ((item.kind() == Value::Kind::List && !item.as_list().is_tuple) || item.kind() == Value::Kind::Dict ||
          item.kind() == Value::Kind::Namespace)
        throw Error("unhashable type: " + quote_name(type_name(item)));
      return item.is_string() && container.as_dict().find(item.as_string()) != nullptr;
    default:
      throw Error("argument of type '" + type_name(container) + "' is not iterable");
  }
}

Value get_attribute(const Value& object, std::string_view name) {
  switch (object.kind()) {
    case Value::Kind::Undefined:
      fail_undefined(object);
    case Value::Kind::Loop:
      return loop_field(object, name);
    case Value::Kind::Namespace: {
      const Value* v = object.as_namespace().find(name);
      return v ? *v : no_attribute(object, name);
    }
    default:
      break;
  }
  if (is_mutator(object, name))
    return Value::undefined("access to attribute '" + std::string(name) + "' of '" + type_name(object) +
                            "' object is unsafe.");
  if (has_method(object, name)) return bound_method(object, name);
  if (object.kind() == Value::Kind::Dict) {
    const Value* v = object.as_dict().find(name);
    if (v) return *v;
  }
  return no_attribute(object, name);
}

Value get_item(const Value& object, const Value& key) {
  if (object.is_undefined()) fail_undefined(object);
  if (object.kind() == Value::Kind::Dict && key.is_string()) {
    const Value* v = object.as_dict().find(key.as_string());
    if (v) return *v;
  }
  if ((object.kind() == Value::Kind::List || object.is_string()) && key.is_int_like()) {
    const int64_t n = length(object);
    int64_t i = key.as_int();
    if (i < 0) i += n;
    if (i >= 0 && i < n) {
      if (object.kind() == Value::Kind::List) return object.as_list().items[static_cast<std::size_t>(i)];
      const std::u32string cps = text::decode(object.as_string());
      std::string c;
      text::append_utf8(c, cps[static_cast<std::size_t>(i)]);
      return Value::string(std::move(c));
    }
    return Value::undefined(type_name(object) + " index " + std::to_string(key.as_int()) + " out of range");
  }
  // Jinja falls back from obj[name] to obj.name.
  if (key.is_string()) return get_attribute(object, key.as_string());
  return Value::undefined(quote_name(type_name(object) + " object") + " has no item " + repr(key));
}

Value slice(const Value& object, const Value* start, const Value* stop, const Value* step) {
  if (object.is_undefined()) fail_undefined(object);
  if (object.kind() != Value::Kind::List && !object.is_string())
    throw Error(quote_name(type_name(object)) + " object is not subscriptable with a slice");
  int64_t by = 1;
  if (step && !step->is_none()) {
    if (!step->is_int_like()) throw Error("slice indices must be integers or None");
    by = step->as_int();
    if (by == 0) throw Error("slice step cannot be zero");
  }
  const bool is_list = object.kind() == Value::Kind::List;
  const std::u32string cps = is_list ? std::u32string() : text::decode(object.as_string());
  const int64_t n = is_list ? static_cast<int64_t>(object.as_list().items.size()) : static_cast<int64_t>(cps.size());
  const int64_t from = slice_bound(start, n, by, true);
  const int64_t to = slice_bound(stop, n, by, false);
  std::vector<Value> items;
  std::u32string chars;
  for (int64_t i = from; by > 0 ? i < to : i > to; i += by) {
    if (is_list) {
      items.push_back(object.as_list().items[static_cast<std::size_t>(i)]);
    } else {
      chars.push_back(cps[static_cast<std::size_t>(i)]);
    }
  }
  if (is_list) return Value::list(std::move(items), object.as_list().is_tuple);
  return Value::string(text::encode(chars));
}

const Value* CallArgs::get(std::size_t index, std::string_view name) const {
  if (index < positional.size()) return &positional[index];
  return find_named(name);
}

const Value* CallArgs::find_named(std::string_view name) const {
  for (const auto& [k, v] : named)
    if (k == name) return &v;
  return nullptr;
}

void CallArgs::check(std::string_view fn, std::size_t max_positional,
                     std::initializer_list<std::string_view> names) const {
  if (positional.size() > max_positional)
    throw Error(std::string(fn) + "() takes at most " + std::to_string(max_positional) + " positional argument(s)");
  for (const auto& [k, v] : named) {
    bool known = false;
    for (std::string_view n : names) known = known || n == k;
    if (!known) throw Error(std::string(fn) + "() got an unexpected keyword argument '" + k + "'");
  }
}

std::optional<std::string> CallArgs::string_arg(std::size_t index, std::string_view name, std::string_view fn) const {
  const Value* v = get(index, name);
  if (!v || v->is_none()) return std::nullopt;
  if (!v->is_string()) throw Error(std::string(fn) + "(): argument '" + std::string(name) + "' must be a string");
  return v->as_string();
}

int64_t CallArgs::int_arg(std::size_t index, std::string_view name, std::string_view fn, int64_t fallback) const {
  const Value* v = get(index, name);
  if (!v || v->is_none()) return fallback;
  if (!v->is_int_like()) throw Error(std::string(fn) + "(): argument '" + std::string(name) + "' must be an integer");
  return v->as_int();
}

bool CallArgs::bool_arg(std::size_t index, std::string_view name, bool fallback) const {
  const Value* v = get(index, name);
  return v ? truthy(*v) : fallback;
}

}  // namespace lamina::model::jinja
