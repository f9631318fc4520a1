// The values a chat template computes with: Python's types as Jinja sees them
// (None, bool, int, float, str, list/tuple, dict), plus Jinja's Undefined,
// namespace(), the loop object and callables.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace lamina::model::jinja {

// An error while evaluating, without a location; the renderer adds the line
// and column of the expression that raised it.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Something Jinja (or Python) would do that this renderer does not: an
// unknown filter or test, %-formatting, integers beyond 64 bits.
class Unsupported : public Error {
 public:
  using Error::Error;
};

struct MacroStmt;
class Value;

// Containers nest at most this deep, so that printing, JSON encoding and
// destruction (all recursive) stay within a small stack.
inline constexpr int kMaxNesting = 128;
// Any string or list a template builds is limited to these sizes.
inline constexpr std::size_t kMaxStringBytes = std::size_t{32} << 20;
inline constexpr std::size_t kMaxListItems = std::size_t{1} << 20;

struct ListData {
  std::vector<Value> items;
  bool is_tuple = false;
  int depth = 1;
};

struct DictData {
  std::vector<std::pair<std::string, Value>> entries;  // insertion order, as Python keeps it
  int depth = 1;
  const Value* find(std::string_view key) const;
};

// namespace(): the one mutable object, so that loops can carry state out.
struct NamespaceData {
  std::vector<std::pair<std::string, Value>> attrs;
  const Value* find(std::string_view key) const;
  void set(std::string_view key, Value value);
};

struct LoopData;
struct CallableData;

class Value {
 public:
  enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict, Namespace, Loop, Callable };

  // Undefined, with the message an error about it should carry.
  Value() : v_(UndefinedTag{}) {}
  static Value undefined(std::string why);
  static Value none() { return Value(NoneTag{}); }
  static Value boolean(bool b) { return Value(b); }
  static Value integer(int64_t i) { return Value(i); }
  static Value number(double d) { return Value(d); }
  static Value string(std::string s);
  static Value list(std::vector<Value> items, bool is_tuple = false);
  static Value dict(std::vector<std::pair<std::string, Value>> entries);
  static Value new_namespace(std::vector<std::pair<std::string, Value>> attrs);
  static Value loop(std::shared_ptr<const LoopData> loop);
  static Value callable(std::shared_ptr<const CallableData> fn);

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  bool is_undefined() const { return kind() == Kind::Undefined; }
  bool is_none() const { return kind() == Kind::None; }
  bool is_string() const { return kind() == Kind::String; }
  bool is_int_like() const { return kind() == Kind::Int || kind() == Kind::Bool; }
  bool is_number() const { return is_int_like() || kind() == Kind::Float; }
  bool is_sequence() const { return kind() == Kind::List; }

  bool as_bool() const { return std::get<bool>(v_); }
  int64_t as_int() const;   // Bool or Int
  double as_float() const;  // any number
  const std::string& as_string() const { return *std::get<StringPtr>(v_); }
  const ListData& as_list() const { return *std::get<ListPtr>(v_); }
  const DictData& as_dict() const { return *std::get<DictPtr>(v_); }
  NamespaceData& as_namespace() const { return *std::get<NamespacePtr>(v_); }
  const LoopData& as_loop() const { return *std::get<LoopPtr>(v_); }
  const CallableData& as_callable() const { return *std::get<CallablePtr>(v_); }
  std::string undefined_reason() const;
  // Same object (namespaces, loops, callables compare by identity).
  const void* identity() const;

 private:
  struct UndefinedTag {
    std::shared_ptr<const std::string> why;  // null: no reason recorded
  };
  struct NoneTag {};
  using StringPtr = std::shared_ptr<const std::string>;
  using ListPtr = std::shared_ptr<const ListData>;
  using DictPtr = std::shared_ptr<const DictData>;
  using NamespacePtr = std::shared_ptr<NamespaceData>;
  using LoopPtr = std::shared_ptr<const LoopData>;
  using CallablePtr = std::shared_ptr<const CallableData>;
  // The order matches Kind.
  using Storage = std::variant<UndefinedTag, NoneTag, bool, int64_t, double, StringPtr, ListPtr, DictPtr, NamespacePtr,
                               LoopPtr, CallablePtr>;
  template <typename T>
  requires(!std::is_same_v<std::decay_t<T>, Value>) explicit Value(T v) : v_(std::move(v)) {}
  Storage v_;
};

struct LoopData {
  int64_t index0 = 0;
  int64_t length = 0;
  Value previous, next;  // undefined at the ends
};

struct CallableData {
  enum class Kind { Macro, Builtin, Method };
  Kind kind = Kind::Builtin;
  std::string name;                  // builtin or method name
  const MacroStmt* macro = nullptr;  // Kind::Macro; owned by the template
  // Kind::Macro: the loop variables and local names visible where a macro was
  // defined inside a block (top-level names are looked up when it runs).
  std::vector<std::pair<std::string, Value>> closure;
  Value receiver;  // Kind::Method: the object the method is bound to
};

// Python's truth value (Undefined is false).
bool truthy(const Value& v);
// str(v) as Python prints it ("None", "True", "[1, 'a']"); Undefined prints as "".
std::string to_str(const Value& v);
// repr(v): strings quoted.
std::string repr(const Value& v);
// The Python type name, for error messages ("str", "int", "list", "dict", "NoneType").
std::string type_name(const Value& v);
// Python's ==.
bool equals(const Value& a, const Value& b);
// Python's ordering for <, <=, >, >=: negative, zero or positive; throws Error
// when the types do not order.
int compare(const Value& a, const Value& b);
// len(v); throws for values without a length. Undefined has length 0.
int64_t length(const Value& v);
// The items `for x in v` visits: list items, dict keys, string characters;
// Undefined visits nothing. Throws for values that are not iterable.
std::vector<Value> iterate(const Value& v);
// Throws Error naming what was undefined.
[[noreturn]] void fail_undefined(const Value& v);
void check_string_size(std::size_t bytes);
// "'name'", as Python names things in messages.
std::string quote_name(std::string_view name);

}  // namespace lamina::model::jinja
