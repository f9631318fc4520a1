#include "jinja/value.h"

#include <algorithm>
#include <cmath>

#include "jinja/text.h"

namespace lamina::model::jinja {
namespace {

int child_depth(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::List:
      return v.as_list().depth;
    case Value::Kind::Dict:
      return v.as_dict().depth;
    default:
      return 0;
  }
}

void check_depth(int depth) {
  if (depth > kMaxNesting) throw Error("lists and dicts nest deeper than " + std::to_string(kMaxNesting) + " levels");
}

// Built by appending: `+` on temporaries trips a false -Wrestrict in GCC 12 at -O3.
std::string join_repr(std::string_view open, const std::vector<Value>& items, std::string_view close) {
  std::string out(open);
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += ", ";
    out += repr(items[i]);
    check_string_size(out.size());
  }
  return out.append(close);
}

std::string entries_repr(const std::vector<std::pair<std::string, Value>>& entries) {
  std::string out = "{";
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (i) out += ", ";
    out += text::python_quote(entries[i].first) + ": " + repr(entries[i].second);
    check_string_size(out.size());
  }
  return out + "}";
}

int compare_numbers(const Value& a, const Value& b) {
  if (a.is_int_like() && b.is_int_like()) return a.as_int() < b.as_int() ? -1 : (a.as_int() > b.as_int() ? 1 : 0);
  const double x = a.as_float(), y = b.as_float();
  return x < y ? -1 : (x > y ? 1 : 0);
}

const Value* find_entry(const std::vector<std::pair<std::string, Value>>& entries, std::string_view key) {
  for (const auto& [k, v] : entries)
    if (k == key) return &v;
  return nullptr;
}

}  // namespace

const Value* DictData::find(std::string_view key) const { return find_entry(entries, key); }
const Value* NamespaceData::find(std::string_view key) const { return find_entry(attrs, key); }

void NamespaceData::set(std::string_view key, Value value) {
  for (auto& [k, v] : attrs) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  attrs.emplace_back(std::string(key), std::move(value));
}

Value Value::undefined(std::string why) {
  UndefinedTag tag;
  tag.why = std::make_shared<const std::string>(std::move(why));
  return Value(std::move(tag));
}

std::string Value::undefined_reason() const {
  const auto& why = std::get<UndefinedTag>(v_).why;
  return why ? *why : "value is undefined";
}

Value Value::string(std::string s) {
  check_string_size(s.size());
  return Value(std::make_shared<const std::string>(std::move(s)));
}

Value Value::list(std::vector<Value> items, bool is_tuple) {
  if (items.size() > kMaxListItems) throw Error("list longer than " + std::to_string(kMaxListItems) + " items");
  auto data = std::make_shared<ListData>();
  for (const Value& item : items) data->depth = std::max(data->depth, 1 + child_depth(item));
  check_depth(data->depth);
  data->items = std::move(items);
  data->is_tuple = is_tuple;
  return Value(ListPtr(std::move(data)));
}

Value Value::dict(std::vector<std::pair<std::string, Value>> entries) {
  if (entries.size() > kMaxListItems) throw Error("dict larger than " + std::to_string(kMaxListItems) + " items");
  auto data = std::make_shared<DictData>();
  for (const auto& [k, v] : entries) data->depth = std::max(data->depth, 1 + child_depth(v));
  check_depth(data->depth);
  // A repeated key keeps its first position and its last value, as in Python.
  for (auto& entry : entries) {
    auto it =
        std::find_if(data->entries.begin(), data->entries.end(), [&](const auto& e) { return e.first == entry.first; });
    if (it != data->entries.end()) {
      it->second = std::move(entry.second);
    } else {
      data->entries.push_back(std::move(entry));
    }
  }

  return Value(DictPtr(std::move(data)));
}

Value Value::new_namespace(std::vector<std::pair<std::string, Value>> attrs) {
  auto data = std::make_shared<NamespaceData>();
  for (auto& [k, v] : attrs) data->set(k, std::move(v));
  return Value(NamespacePtr(std::move(data)));
}

Value Value::loop(std::shared_ptr<const LoopData> loop) { return Value(LoopPtr(std::move(loop))); }
Value Value::callable(std::shared_ptr<const CallableData> fn) { return Value(CallablePtr(std::move(fn))); }

int64_t Value::as_int() const { return kind() == Kind::Bool ? (as_bool() ? 1 : 0) : std::get<int64_t>(v_); }

double Value::as_float() const { return kind() == Kind::Float ? std::get<double>(v_) : static_cast<double>(as_int()); }

const void* Value::identity() const {
  switch (kind()) {
    case Kind::String:
      return std::get<StringPtr>(v_).get();
    case Kind::List:
      return std::get<ListPtr>(v_).get();
    case Kind::Dict:
      return std::get<DictPtr>(v_).get();
    case Kind::Namespace:
      return std::get<NamespacePtr>(v_).get();
    case Kind::Loop:
      return std::get<LoopPtr>(v_).get();
    case Kind::Callable:
      return std::get<CallablePtr>(v_).get();
    default:
      return nullptr;
  }
}

bool truthy(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined:
    case Value::Kind::None:
      return false;
    case Value::Kind::Bool:
      return v.as_bool();
    case Value::Kind::Int:
      return v.as_int() != 0;
    case Value::Kind::Float:
      return v.as_float() != 0.0;
    case Value::Kind::String:
      return !v.as_string().empty();
    case Value::Kind::List:
      return !v.as_list().items.empty();
    case Value::Kind::Dict:
      return !v.as_dict().entries.empty();
    default:
      return true;
  }
}

std::string to_str(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined:
      return {};
    case Value::Kind::None:
      return "None";
    case Value::Kind::Bool:
      return v.as_bool() ? "True" : "False";
    case Value::Kind::Int:
      return std::to_string(v.as_int());
    case Value::Kind::Float:
      return text::float_repr(v.as_float());
    case Value::Kind::String:
      return v.as_string();
    case Value::Kind::List: {
      const ListData& l = v.as_list();
      if (!l.is_tuple) return join_repr("[", l.items, "]");
      return join_repr("(", l.items, l.items.size() == 1 ? ",)" : ")");
    }
    case Value::Kind::Dict:
      return entries_repr(v.as_dict().entries);
    case Value::Kind::Namespace:
      return std::string("<Namespace ").append(entries_repr(v.as_namespace().attrs)).append(">");
    case Value::Kind::Loop: {
      const LoopData& l = v.as_loop();
      return std::string("<LoopContext ")
          .append(std::to_string(l.index0 + 1))
          .append("/")
          .append(std::to_string(l.length))
          .append(">");
    }
    case Value::Kind::Callable:
      return std::string("<function ").append(v.as_callable().name).append(">");
  }
  return {};
}

std::string repr(const Value& v) {
  if (v.is_string()) return text::python_quote(v.as_string());
  if (v.is_undefined()) return "Undefined";
  return to_str(v);
}

std::string type_name(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined:
      return "Undefined";
    case Value::Kind::None:
      return "NoneType";
    case Value::Kind::Bool:
      return "bool";
    case Value::Kind::Int:
      return "int";
    case Value::Kind::Float:
      return "float";
    case Value::Kind::String:
      return "str";
    case Value::Kind::List:
      return v.as_list().is_tuple ? "tuple" : "list";
    case Value::Kind::Dict:
      return "dict";
    case Value::Kind::Namespace:
      return "Namespace";
    case Value::Kind::Loop:
      return "LoopContext";
    case Value::Kind::Callable:
      return "function";
  }
  return "object";
}

bool equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) return compare_numbers(a, b) == 0;
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::Undefined:
    case Value::Kind::None:
      return true;
    case Value::Kind::String:
      return a.as_string() == b.as_string();
    case Value::Kind::List: {
      const ListData &x = a.as_list(), &y = b.as_list();
      if (x.is_tuple != y.is_tuple || x.items.size() != y.items.size()) return false;
      for (std::size_t i = 0; i < x.items.size(); ++i)
        if (!equals(x.items[i], y.items[i])) return false;
      return true;
    }
    case Value::Kind::Dict: {
      const DictData &x = a.as_dict(), &y = b.as_dict();
      if (x.entries.size() != y.entries.size()) return false;
      for (const auto& [k, val] : x.entries) {
        const Value* other = y.find(k);
        if (!other || !equals(val, *other)) return false;
      }
      return true;
    }
    default:
      return a.identity() == b.identity();
  }
}

int compare(const Value& a, const Value& b) {
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  if (a.is_number() && b.is_number()) return compare_numbers(a, b);
  if (a.is_string() && b.is_string()) {
    const int c = a.as_string().compare(b.as_string());
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if (a.kind() == Value::Kind::List && b.kind() == Value::Kind::List && a.as_list().is_tuple == b.as_list().is_tuple) {
    const auto &x = a.as_list().items, &y = b.as_list().items;
    for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (equals(x[i], y[i])) continue;
      return compare(x[i], y[i]);
    }
    return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
  }
  throw Error("'<' not supported between instances of '" + type_name(a) + "' and '" + type_name(b) + "'");
}

int64_t length(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined:
      return 0;
    case Value::Kind::String:
      return text::length(v.as_string());
    case Value::Kind::List:
      return static_cast<int64_t>(v.as_list().items.size());
    case Value::Kind::Dict:
      return static_cast<int64_t>(v.as_dict().entries.size());
    default:
      throw Error("object of type '" + type_name(v) + "' has no len()");
  }
}

std::vector<Value> iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined:
      return {};
    case Value::Kind::List:
      return v.as_list().items;
    case Value::Kind::Dict: {
      std::vector<Value> keys;
      keys.reserve(v.as_dict().entries.size());
      for (const auto& [k, val] : v.as_dict().entries) keys.push_back(Value::string(k));
      return keys;
    }
    case Value::Kind::String: {
      if (v.as_string().size() > kMaxListItems && text::length(v.as_string()) > static_cast<int64_t>(kMaxListItems))
        throw Error("cannot iterate over a string of more than " + std::to_string(kMaxListItems) + " characters");
      std::vector<Value> chars;
      for (char32_t c : text::decode(v.as_string())) {
        std::string s;
        text::append_utf8(s, c);
        chars.push_back(Value::string(std::move(s)));
      }
      return chars;
    }
    default:
      throw Error(quote_name(type_name(v)) + " object is not iterable");
  }
}

std::string quote_name(std::string_view name) {
  // Appended piecewise: `+` on temporaries trips a false -Wrestrict in GCC 12 at -O3.
  std::string out = "'";
  out.append(name).append("'");
  return out;
}

void fail_undefined(const Value& v) { throw Error(v.undefined_reason()); }

void check_string_size(std::size_t bytes) {
  if (bytes > kMaxStringBytes) throw Error("string longer than " + std::to_string(kMaxStringBytes >> 20) + " MiB");
}

}  // namespace lamina::model::jinja
