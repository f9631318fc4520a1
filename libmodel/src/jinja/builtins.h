// What templates can do to values: operators, attribute and item access,
// filters, tests, the methods of str/dict/list, the global functions, and the
// JSON encoding of |tojson. Everything here is a function of its arguments;
// the renderer adds locations to the errors these throw.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jinja/ast.h"
#include "jinja/value.h"

namespace lamina::model::jinja {

// A cap on the work one render may do (loop iterations, values built), so a
// hostile template ends with an error instead of running for hours.
class Budget {
 public:
  explicit Budget(uint64_t limit) : left_(limit) {}
  void charge(uint64_t units) {
    if (units > left_) throw Error("the template does too much work (more than the render budget)");
    left_ -= units;
  }

 private:
  uint64_t left_;
};

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> named;

  // The argument at `index` or named `name`; nullptr when not given.
  const Value* get(std::size_t index, std::string_view name) const;
  // The keyword argument `name` only.
  const Value* find_named(std::string_view name) const;
  // Throws when more positional arguments or other names are given than `fn` takes.
  void check(std::string_view fn, std::size_t max_positional, std::initializer_list<std::string_view> names) const;
  std::optional<std::string> string_arg(std::size_t index, std::string_view name, std::string_view fn) const;
  int64_t int_arg(std::size_t index, std::string_view name, std::string_view fn, int64_t fallback) const;
  bool bool_arg(std::size_t index, std::string_view name, bool fallback) const;
};

// Operators.
Value binary_op(BinaryOp op, const Value& a, const Value& b, Budget& budget);
Value negate(const Value& v);
// `item in container`.
bool contains(const Value& container, const Value& item);
// obj.name: a dict's entry, a namespace's attribute, a loop field, or a bound
// method; Undefined (carrying the reason) when there is none.
Value get_attribute(const Value& object, std::string_view name);
// obj[key]; Undefined when the key or index is absent.
Value get_item(const Value& object, const Value& key);
// obj[start:stop:step]; each bound may be None or absent.
Value slice(const Value& object, const Value* start, const Value* stop, const Value* step);

// Filters and tests by name. Throws Error for unknown names.
Value apply_filter(std::string_view name, const Value& value, const CallArgs& args, Budget& budget);
bool apply_test(std::string_view name, const Value& value, const CallArgs& args);
bool is_known_test(std::string_view name);

// Methods of str, dict and list (Kind::Method callables).
Value call_method(const Value& receiver, std::string_view name, const CallArgs& args, Budget& budget);
bool has_method(const Value& receiver, std::string_view name);
// Global functions: range, namespace, dict, raise_exception, strftime_now.
bool is_global_function(std::string_view name);
Value call_global(std::string_view name, const CallArgs& args, Budget& budget);

struct JsonFormat {
  std::optional<std::string> indent;  // null: one line
  std::string item_separator = ", ";
  std::string key_separator = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;  // escape non-ASCII as \uXXXX
};
// json.dumps(value, ensure_ascii=False, ...) as transformers' |tojson calls it.
std::string to_json(const Value& value, const JsonFormat& format);

}  // namespace lamina::model::jinja
