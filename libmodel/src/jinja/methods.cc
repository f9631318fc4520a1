// The methods of str, dict and list that templates call, loop.cycle(), and
// the global functions transformers' template environment provides.
#include <algorithm>
#include <ctime>

#include "jinja/builtins.h"
#include "jinja/text.h"
#include "lamina/model/chat_template.h"

namespace lamina::model::jinja {
namespace {

constexpr std::string_view kStringMethods[] = {
    "startswith", "endswith", "split",   "rsplit",     "strip",   "lstrip",  "rstrip", "replace",
    "title",      "upper",    "lower",   "capitalize", "find",    "rfind",   "count",  "join",
    "splitlines", "isdigit",  "isalpha", "isalnum",    "isspace", "isupper", "islower"};
constexpr std::string_view kDictMethods[] = {"items", "keys", "values", "get"};
constexpr std::string_view kListMethods[] = {"index", "count"};

template <std::size_t N>
bool listed(const std::string_view (&names)[N], std::string_view name) {
  return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

std::vector<Value> string_values(const std::vector<std::string>& parts) {
  std::vector<Value> out;
  out.reserve(parts.size());
  for (const auto& p : parts) out.push_back(Value::string(p));
  return out;
}

// startswith/endswith take one string or a tuple of them.
bool affix_matches(std::string_view s, const Value& affix, bool at_start) {
  const auto one = [&](const Value& a) {
    if (!a.is_string()) throw Error("startswith/endswith first arg must be str or a tuple of str");
    const std::string& x = a.as_string();
    if (x.size() > s.size()) return false;
    return at_start ? s.compare(0, x.size(), x) == 0 : s.compare(s.size() - x.size(), x.size(), x) == 0;
  };
  if (affix.kind() == Value::Kind::List) {
    for (const Value& a : affix.as_list().items)
      if (one(a)) return true;
    return false;
  }
  return one(affix);
}

bool all_code_points(std::string_view s, bool (*pred)(char32_t)) {
  const std::u32string cps = text::decode(s);
  return !cps.empty() && std::all_of(cps.begin(), cps.end(), pred);
}

bool ascii_digit(char32_t c) { return c >= '0' && c <= '9'; }
bool ascii_alpha(char32_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c > 0x7F; }
bool ascii_alnum(char32_t c) { return ascii_digit(c) || ascii_alpha(c); }

Value string_method(const std::string& s, std::string_view name, const CallArgs& args) {
  const std::string fn = "str." + std::string(name);
  if (name == "startswith" || name == "endswith") {
    args.check(fn, 1, {});
    const Value* affix = args.get(0, "");
    if (!affix) throw Error(fn + "() takes at least 1 argument");
    return Value::boolean(affix_matches(s, *affix, name == "startswith"));
  }
  if (name == "split" || name == "rsplit") {
    args.check(fn, 2, {"sep", "maxsplit"});
    const auto sep = args.string_arg(0, "sep", fn);
    const int64_t maxsplit = args.int_arg(1, "maxsplit", fn, -1);
    return Value::list(string_values(name == "split" ? text::split(s, sep, maxsplit) : text::rsplit(s, sep, maxsplit)));
  }
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    args.check(fn, 1, {"chars"});
    return Value::string(text::strip(s, args.string_arg(0, "chars", fn), name != "rstrip", name != "lstrip"));
  }
  if (name == "replace") {
    args.check(fn, 3, {"count"});
    const auto old = args.string_arg(0, "old", fn), with = args.string_arg(1, "new", fn);
    if (!old || !with) throw Error(fn + "() takes at least 2 arguments");
    return Value::string(text::replace(s, *old, *with, args.int_arg(2, "count", fn, -1)));
  }
  if (name == "find" || name == "rfind" || name == "count") {
    args.check(fn, 1, {});
    const auto sub = args.string_arg(0, "sub", fn);
    if (!sub) throw Error(fn + "() takes a string argument");
    return Value::integer(name == "count" ? text::count(s, *sub) : text::find(s, *sub, name == "rfind"));
  }
  if (name == "join") {
    args.check(fn, 1, {});
    const Value* items = args.get(0, "iterable");
    if (!items) throw Error(fn + "() takes exactly one argument");
    std::string out;
    bool first = true;
    for (const Value& v : iterate(*items)) {
      if (!v.is_string()) throw Error("sequence item: expected str instance, " + type_name(v) + " found");
      if (!first) out += s;
      out += v.as_string();
      check_string_size(out.size());
      first = false;
    }
    return Value::string(std::move(out));
  }
  if (name == "splitlines") {
    args.check(fn, 1, {"keepends"});
    std::vector<std::string> lines;
    const bool keep = args.bool_arg(0, "keepends", false);
    std::size_t start = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i] != '\n' && s[i] != '\r') continue;
      std::size_t end = i;
      if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
      lines.push_back(s.substr(start, (keep ? i + 1 : end) - start));
      start = i + 1;
    }
    if (start < s.size()) lines.push_back(s.substr(start));
    return Value::list(string_values(lines));
  }
  args.check(fn, 0, {});
  if (name == "title") return Value::string(text::python_title(s));
  if (name == "upper") return Value::string(text::upper(s));
  if (name == "lower") return Value::string(text::lower(s));
  if (name == "capitalize") return Value::string(text::capitalize(s));
  if (name == "isdigit") return Value::boolean(all_code_points(s, ascii_digit));
  if (name == "isalpha") return Value::boolean(all_code_points(s, ascii_alpha));
  if (name == "isalnum") return Value::boolean(all_code_points(s, ascii_alnum));
  if (name == "isspace") return Value::boolean(all_code_points(s, text::is_space));
  if (name == "isupper") return Value::boolean(text::is_upper(s));
  if (name == "islower") return Value::boolean(text::is_lower(s));
  throw Error("'str' object has no method '" + std::string(name) + "'");
}

Value dict_method(const DictData& d, std::string_view name, const CallArgs& args) {
  const std::string fn = "dict." + std::string(name);
  if (name == "get") {
    args.check(fn, 2, {});
    const Value* key = args.get(0, "key");
    const Value* fallback = args.get(1, "default");
    if (!key) throw Error("dict.get() takes at least 1 argument");
    const Value* found = key->is_string() ? d.find(key->as_string()) : nullptr;
    if (found) return *found;
    return fallback ? *fallback : Value::none();
  }
  args.check(fn, 0, {});
  std::vector<Value> out;
  out.reserve(d.entries.size());
  for (const auto& [k, v] : d.entries) {
    if (name == "items") {
      out.push_back(Value::list({Value::string(k), v}, true));
    } else if (name == "keys") {
      out.push_back(Value::string(k));
    } else {
      out.push_back(v);
    }
  }
  return Value::list(std::move(out));
}

Value list_method(const ListData& l, std::string_view name, const CallArgs& args) {
  args.check("list." + std::string(name), 1, {});
  const Value* x = args.get(0, "value");
  if (!x) throw Error("list." + std::string(name) + "() takes exactly one argument");
  int64_t count = 0;
  for (std::size_t i = 0; i < l.items.size(); ++i) {
    if (!equals(l.items[i], *x)) continue;
    if (name == "index") return Value::integer(static_cast<int64_t>(i));
    ++count;
  }
  if (name == "index") throw Error(repr(*x) + " is not in list");
  return Value::integer(count);
}

Value make_range(const CallArgs& args, Budget& budget) {
  args.check("range", 3, {});
  if (args.positional.empty()) throw Error("range expected at least 1 argument, got 0");
  for (const Value& v : args.positional)
    if (!v.is_int_like()) throw Error("range() arguments must be integers, not '" + type_name(v) + "'");
  const bool one = args.positional.size() == 1;
  const int64_t start = one ? 0 : args.positional[0].as_int();
  const int64_t stop = one ? args.positional[0].as_int() : args.positional[1].as_int();
  const int64_t step = args.positional.size() == 3 ? args.positional[2].as_int() : 1;
  if (step == 0) throw Error("range() arg 3 must not be zero");
  // Counted in unsigned arithmetic, so that extreme bounds cannot overflow.
  uint64_t n = 0;
  if (step > 0 && start < stop)
    n = (static_cast<uint64_t>(stop) - static_cast<uint64_t>(start) - 1) / static_cast<uint64_t>(step) + 1;
  if (step < 0 && start > stop)
    n = (static_cast<uint64_t>(start) - static_cast<uint64_t>(stop) - 1) / (0 - static_cast<uint64_t>(step)) + 1;
  if (n > kMaxListItems) throw Error("range() of more than " + std::to_string(kMaxListItems) + " items");
  budget.charge(n);
  std::vector<Value> items;
  items.reserve(n);
  for (uint64_t i = 0; i < n; ++i) items.push_back(Value::integer(start + static_cast<int64_t>(i) * step));
  return Value::list(std::move(items));
}

// dict(mapping, **kwargs) and namespace(mapping, **kwargs).
std::vector<std::pair<std::string, Value>> mapping_arguments(std::string_view fn, const CallArgs& args) {
  if (args.positional.size() > 1) throw Error(std::string(fn) + "() takes at most 1 positional argument");
  std::vector<std::pair<std::string, Value>> entries;
  if (!args.positional.empty()) {
    const Value& m = args.positional[0];
    if (m.kind() != Value::Kind::Dict) throw Error(std::string(fn) + "() argument must be a mapping");
    entries = m.as_dict().entries;
  }
  for (const auto& kv : args.named) entries.push_back(kv);
  return entries;
}

Value strftime_now(const CallArgs& args) {
  args.check("strftime_now", 1, {});
  const auto format = args.string_arg(0, "format", "strftime_now");
  if (!format) throw Error("strftime_now() takes a format string");
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char buf[512];
  const std::size_t n = std::strftime(buf, sizeof buf, format->c_str(), &local);
  if (n == 0 && !format->empty()) throw Error("strftime_now(): the formatted date is empty or too long");
  return Value::string(std::string(buf, n));
}

}  // namespace

bool has_method(const Value& receiver, std::string_view name) {
  switch (receiver.kind()) {
    case Value::Kind::String:
      return listed(kStringMethods, name);
    case Value::Kind::Dict:
      return listed(kDictMethods, name);
    case Value::Kind::List:
      return listed(kListMethods, name);
    default:
      return false;
  }
}

Value call_method(const Value& receiver, std::string_view name, const CallArgs& args, Budget& budget) {
  switch (receiver.kind()) {
    case Value::Kind::String:
      return string_method(receiver.as_string(), name, args);
    case Value::Kind::Dict:
      budget.charge(receiver.as_dict().entries.size());
      return dict_method(receiver.as_dict(), name, args);
    case Value::Kind::List:
      budget.charge(receiver.as_list().items.size());
      return list_method(receiver.as_list(), name, args);
    case Value::Kind::Loop: {
      if (args.positional.empty()) throw Error("loop.cycle() needs at least one value");
      const auto n = static_cast<int64_t>(args.positional.size());
      return args.positional[static_cast<std::size_t>(receiver.as_loop().index0 % n)];
    }
    default:
      throw Error(quote_name(type_name(receiver)) + " object has no method " + quote_name(name));
  }
}

bool is_global_function(std::string_view name) {
  return name == "range" || name == "namespace" || name == "dict" || name == "raise_exception" ||
         name == "strftime_now";
}

Value call_global(std::string_view name, const CallArgs& args, Budget& budget) {
  if (name == "range") return make_range(args, budget);
  if (name == "namespace") return Value::new_namespace(mapping_arguments(name, args));
  if (name == "dict") return Value::dict(mapping_arguments(name, args));
  if (name == "strftime_now") return strftime_now(args);
  if (name == "raise_exception") {
    const Value* message = args.get(0, "message");
    throw ChatTemplateError(ChatTemplateError::Kind::Raised, message ? to_str(*message) : std::string());
  }
  throw Error(quote_name(name) + " is not a function");
}

}  // namespace lamina::model::jinja
