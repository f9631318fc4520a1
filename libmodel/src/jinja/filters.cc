// Jinja's built-in filters (the ones chat templates use), with transformers'
// own |tojson.
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "jinja/builtins.h"
#include "jinja/text.h"

namespace lamina::model::jinja {
namespace {

using FilterFn = Value (*)(const Value&, const CallArgs&, Budget&);

// Jinja's attribute getter for map/sort/selectattr: "a.b.0" walks items and
// attributes; digit parts index sequences.
Value attribute_path(Value v, const std::string& path) {
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    const bool digits =
        !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    int64_t index = 0;
    const bool is_index = digits && std::from_chars(part.data(), part.data() + part.size(), index).ec == std::errc();
    v = get_item(v, is_index ? Value::integer(index) : Value::string(part));
    if (dot == std::string::npos) return v;
    start = dot + 1;
  }
}

// The key sort/unique/min/max compare by: an attribute, lower-cased unless case-sensitive.
Value sort_key(const Value& v, const std::optional<std::string>& attribute, bool case_sensitive) {
  Value key = attribute ? attribute_path(v, *attribute) : v;
  if (!case_sensitive && key.is_string()) return Value::string(text::lower(key.as_string()));
  return key;
}

std::vector<Value> items_of(const Value& v, Budget& budget) {
  std::vector<Value> items = iterate(v);
  budget.charge(items.size());
  return items;
}

Value f_abs(const Value& v, const CallArgs& a, Budget&) {
  a.check("abs", 0, {});
  if (v.is_int_like()) return v.as_int() < 0 ? negate(v) : Value::integer(v.as_int());
  if (v.kind() == Value::Kind::Float) return Value::number(std::fabs(v.as_float()));
  throw Error("bad operand type for abs(): '" + type_name(v) + "'");
}

Value f_attr(const Value& v, const CallArgs& a, Budget&) {
  a.check("attr", 1, {"name"});
  const auto name = a.string_arg(0, "name", "attr");
  if (!name) throw Error("attr() needs an attribute name");
  return get_attribute(v, *name);
}

Value f_capitalize(const Value& v, const CallArgs& a, Budget&) {
  a.check("capitalize", 0, {});
  return Value::string(text::capitalize(to_str(v)));
}

Value f_length(const Value& v, const CallArgs& a, Budget&) {
  a.check("length", 0, {});
  return Value::integer(length(v));
}

Value f_default(const Value& v, const CallArgs& a, Budget&) {
  a.check("default", 2, {"default_value", "boolean"});
  const Value* fallback = a.get(0, "default_value");
  const bool use = v.is_undefined() || (a.bool_arg(1, "boolean", false) && !truthy(v));
  if (!use) return v;
  return fallback ? *fallback : Value::string("");
}

Value f_dictsort(const Value& v, const CallArgs& a, Budget& budget) {
  a.check("dictsort", 3, {"case_sensitive", "by", "reverse"});
  if (v.is_undefined()) fail_undefined(v);
  if (v.kind() != Value::Kind::Dict) throw Error("dictsort() needs a dict");
  const bool case_sensitive = a.bool_arg(0, "case_sensitive", false);
  const auto by = a.string_arg(1, "by", "dictsort").value_or("key");
  if (by != "key" && by != "value") throw Error("dictsort(): 'by' must be 'key' or 'value'");
  const bool reverse = a.bool_arg(2, "reverse", false);
  budget.charge(v.as_dict().entries.size());
  std::vector<Value> pairs;
  for (const auto& [k, val] : v.as_dict().entries) pairs.push_back(Value::list({Value::string(k), val}, true));
  const std::size_t index = by == "key" ? 0 : 1;
  std::stable_sort(pairs.begin(), pairs.end(), [&](const Value& x, const Value& y) {
    const int c = compare(sort_key(x.as_list().items[index], std::nullopt, case_sensitive),
                          sort_key(y.as_list().items[index], std::nullopt, case_sensitive));
    return reverse ? c > 0 : c < 0;
  });
  return Value::list(std::move(pairs));
}

Value f_escape(const Value& v, const CallArgs& a, Budget&) {
  a.check("escape", 0, {});
  std::string out;
  for (char c : to_str(v)) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.push_back(c);
    }
  }
  return Value::string(std::move(out));
}

Value first_or_last(const Value& v, const CallArgs& a, Budget& budget, bool first) {
  a.check(first ? "first" : "last", 0, {});
  const std::vector<Value> items = items_of(v, budget);
  if (items.empty())
    return Value::undefined(std::string("No ") + (first ? "first" : "last") + " item, sequence was empty.");
  return first ? items.front() : items.back();
}
Value f_first(const Value& v, const CallArgs& a, Budget& b) { return first_or_last(v, a, b, true); }
Value f_last(const Value& v, const CallArgs& a, Budget& b) { return first_or_last(v, a, b, false); }

// Python's float() of a string: the whole text (less surrounding space) must parse.
std::optional<double> parse_float(const std::string& s) {
  const std::string t = text::strip(s, std::nullopt, true, true);
  if (t.empty()) return std::nullopt;
  char* end = nullptr;
  const double d = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size()) return std::nullopt;
  return d;
}

Value f_float(const Value& v, const CallArgs& a, Budget&) {
  a.check("float", 1, {"default"});
  if (v.is_undefined()) fail_undefined(v);
  if (v.is_number()) return Value::number(v.as_float());
  if (v.is_string())
    if (const auto d = parse_float(v.as_string())) return Value::number(*d);
  const Value* fallback = a.get(0, "default");
  return fallback ? *fallback : Value::number(0.0);
}

Value f_int(const Value& v, const CallArgs& a, Budget&) {
  a.check("int", 2, {"default", "base"});
  if (v.is_undefined()) fail_undefined(v);
  if (v.is_int_like()) return Value::integer(v.as_int());
  if (v.kind() == Value::Kind::Float && std::isfinite(v.as_float()) && std::fabs(v.as_float()) < 9.2e18)
    return Value::integer(static_cast<int64_t>(v.as_float()));
  if (v.is_string()) {
    const int base = static_cast<int>(a.int_arg(1, "base", "int", 10));
    std::string t = text::strip(v.as_string(), std::nullopt, true, true);
    t.erase(std::remove(t.begin(), t.end(), '_'), t.end());
    errno = 0;
    char* end = nullptr;
    const long long parsed = std::strtoll(t.c_str(), &end, base);
    if (!t.empty() && end == t.c_str() + t.size() && errno == 0) return Value::integer(parsed);
    if (const auto d = parse_float(v.as_string()); d && std::isfinite(*d) && std::fabs(*d) < 9.2e18)
      return Value::integer(static_cast<int64_t>(*d));
  }
  const Value* fallback = a.get(0, "default");
  return fallback ? *fallback : Value::integer(0);
}

Value f_indent(const Value& v, const CallArgs& a, Budget&) {
  a.check("indent", 3, {"width", "first", "blank"});
  if (v.is_undefined()) fail_undefined(v);
  if (!v.is_string()) throw Error("indent() needs a string, not " + quote_name(type_name(v)));
  const Value* width = a.get(0, "width");
  const std::string indention =
      width && width->is_string()
          ? width->as_string()
          : std::string(static_cast<std::size_t>(std::clamp<int64_t>(a.int_arg(0, "width", "indent", 4), 0, 4096)),
                        ' ');
  const bool first = a.bool_arg(1, "first", false), blank = a.bool_arg(2, "blank", false);
  // As Jinja does: a newline is added so that splitlines() keeps a final empty line.
  std::vector<std::string> lines;
  const std::string s = v.as_string() + "\n";
  std::size_t start = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\n' && s[i] != '\r') continue;
    lines.push_back(s.substr(start, i - start));
    if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
    start = i + 1;
  }
  std::string out = lines.front();
  for (std::size_t i = 1; i < lines.size(); ++i) {
    out += "\n";
    if (blank || !lines[i].empty()) out += indention;
    out += lines[i];
    check_string_size(out.size());
  }
  return Value::string(first ? indention + out : out);
}

Value f_items(const Value& v, const CallArgs& a, Budget& budget) {
  a.check("items", 0, {});
  if (v.is_undefined()) return Value::list({});
  if (v.kind() != Value::Kind::Dict) throw Error("Can only get item pairs from a mapping.");
  return call_method(v, "items", {}, budget);
}

Value f_join(const Value& v, const CallArgs& a, Budget& budget) {
  a.check("join", 2, {"d", "attribute"});
  const auto separator = a.string_arg(0, "d", "join").value_or("");
  const auto attribute = a.string_arg(1, "attribute", "join");
  std::string out;
  bool first = true;
  for (const Value& item : items_of(v, budget)) {
    if (!first) out += separator;
    out += to_str(attribute ? attribute_path(item, *attribute) : item);
    check_string_size(out.size());
    first = false;
  }
  return Value::string(std::move(out));
}

Value f_list(const Value& v, const CallArgs& a, Budget& budget) {
  a.check("list", 0, {});
  return Value::list(items_of(v, budget));
}

Value f_lower(const Value& v, const CallArgs& a, Budget&) {
  a.check("lower", 0, {});
  return Value::string(text::lower(to_str(v)));
}

Value f_upper(const Value& v, const CallArgs& a, Budget&) {
  a.check("upper", 0, {});
  return Value::string(text::upper(to_str(v)));
}

Value f_title(const Value& v, const CallArgs& a, Budget&) {
  a.check("title", 0, {});
  return Value::string(text::jinja_title(to_str(v)));
}

Value f_trim(const Value& v, const CallArgs& a, Budget&) {
  a.check("trim", 1, {"chars"});
  return Value::string(text::strip(to_str(v), a.string_arg(0, "chars", "trim"), true, true));
}

Value f_string(const Value& v, const CallArgs& a, Budget&) {
  a.check("string", 0, {});
  return Value::string(to_str(v));
}

// Markup(value): the text, marked safe (which nothing here distinguishes).
Value f_safe(const Value& v, const CallArgs& a, Budget&) {
  a.check("safe", 0, {});
  return v.is_string() ? v : Value::string(to_str(v));
}

Value f_map(const Value& v, const CallArgs& a, Budget& budget) {
  std::vector<Value> out;
  if (const Value* attribute = a.find_named("attribute"); attribute && a.positional.empty()) {
    a.check("map", 0, {"attribute", "default"});
    if (!attribute->is_string()) throw Error("map(): 'attribute' must be a string");
    const Value* fallback = a.find_named("default");
    for (const Value& item : items_of(v, budget)) {
      Value x = attribute_path(item, attribute->as_string());
      out.push_back(x.is_undefined() && fallback ? *fallback : x);
    }
    return Value::list(std::move(out));
  }
  if (a.positional.empty() || !a.positional[0].is_string()) throw Error("map() needs a filter name or attribute=");
  CallArgs rest;
  rest.positional.assign(a.positional.begin() + 1, a.positional.end());
  rest.named = a.named;
  for (const Value& item : items_of(v, budget))
    out.push_back(apply_filter(a.positional[0].as_string(), item, rest, budget));
  return Value::list(std::move(out));
}

// select / reject / selectattr / rejectattr.
Value select_items(const Value& v, const CallArgs& a, Budget& budget, bool by_attribute, bool keep) {
  std::size_t next = 0;
  std::optional<std::string> attribute;
  if (by_attribute) {
    if (a.positional.empty() || !a.positional[0].is_string()) throw Error("selectattr() needs an attribute name");
    attribute = a.positional[next++].as_string();
  }
  std::optional<std::string> test;
  if (next < a.positional.size()) {
    if (!a.positional[next].is_string()) throw Error("select() needs a test name");
    test = a.positional[next++].as_string();
  }
  CallArgs test_args;
  test_args.positional.assign(a.positional.begin() + static_cast<std::ptrdiff_t>(next), a.positional.end());
  test_args.named = a.named;
  std::vector<Value> out;
  for (const Value& item : items_of(v, budget)) {
    const Value x = attribute ? attribute_path(item, *attribute) : item;
    const bool passed = test ? apply_test(*test, x, test_args) : truthy(x);
    if (passed == keep) out.push_back(item);
  }
  return Value::list(std::move(out));
}
Value f_select(const Value& v, const CallArgs& a, Budget& b) { return select_items(v, a, b, false, true); }
Value f_reject(const Value& v, const CallArgs& a, Budget& b) { return select_items(v, a, b, false, false); }
Value f_selectattr(const Value& v, const CallArgs& a, Budget& b) { return select_items(v, a, b, true, true); }
Value f_rejectattr(const Value& v, const CallArgs& a, Budget& b) { return select_items(v, a, b, true, false); }

Value extreme(const Value& v, const CallArgs& a, Budget& budget, bool want_max) {
  a.check(want_max ? "max" : "min", 2, {"case_sensitive", "attribute"});
  const bool case_sensitive = a.bool_arg(0, "case_sensitive", false);
  const auto attribute = a.string_arg(1, "attribute", "max");
  const std::vector<Value> items = items_of(v, budget);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  std::size_t best = 0;
  for (std::size_t i = 1; i < items.size(); ++i) {
    const int c =
        compare(sort_key(items[i], attribute, case_sensitive), sort_key(items[best], attribute, case_sensitive));
    if (want_max ? c > 0 : c < 0) best = i;
  }
  return items[best];
}
Value f_max(const Value& v, const CallArgs& a, Budget& b) { return extreme(v, a, b, true); }
Value f_min(const Value& v, const CallArgs& a, Budget& b) { return extreme(v, a, b, false); }

Value f_replace(const Value& v, const CallArgs& a, Budget&) {
  a.check("replace", 3, {"old", "new", "count"});
  const Value* old = a.get(0, "old");
  const Value* with = a.get(1, "new");
  if (!old || !with) throw Error("replace() needs the old and new text");
  return Value::string(text::replace(to_str(v), to_str(*old), to_str(*with), a.int_arg(2, "count", "replace", -1)));
}

Value f_reverse(const Value& v, const CallArgs& a, Budget& budget) {
  a.check("reverse", 0, {});
  if (v.is_string()) {
    std::u32string cps = text::decode(v.as_string());
    std::reverse(cps.begin(), cps.end());
    return Value::string(text::encode(cps));
  }
  std::vector<Value> items = items_of(v, budget);
  std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}

// Python's round(): halves go to the even neighbour, decided on the exact binary value.
double round_half_even(double x, int64_t digits) {
  if (!std::isfinite(x)) return x;
  if (digits >= 0) {
    char buf[512];
    std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(std::min<int64_t>(digits, 300)), x);
    return std::strtod(buf, nullptr);
  }
  const double scale = std::pow(10.0, static_cast<double>(-digits));
  return std::nearbyint(x / scale) * scale;
}

Value f_round(const Value& v, const CallArgs& a, Budget&) {
  a.check("round", 2, {"precision", "method"});
  if (v.is_undefined()) fail_undefined(v);
  if (!v.is_number()) throw Error("round() needs a number, not '" + type_name(v) + "'");
  const int64_t precision = a.int_arg(0, "precision", "round", 0);
  const auto method = a.string_arg(1, "method", "round").value_or("common");
  if (method == "common") {
    if (v.is_int_like()) {
      if (precision >= 0) return Value::integer(v.as_int());
      return Value::integer(static_cast<int64_t>(round_half_even(static_cast<double>(v.as_int()), precision)));
    }
    return Value::number(round_half_even(v.as_float(), precision));
  }
  if (method != "floor" && method != "ceil") throw Error("round(): method must be 'common', 'ceil' or 'floor'");
  const double scale = std::pow(10.0, static_cast<double>(precision));
  const double x = v.as_float() * scale;
  return Value::number((method == "floor" ? std::floor(x) : std::ceil(x)) / scale);
}

Value f_sort(const Value& v, const CallArgs& a, Budget& budget) {
  a.check("sort", 3, {"reverse", "case_sensitive", "attribute"});
  const bool reverse = a.bool_arg(0, "reverse", false), case_sensitive = a.bool_arg(1, "case_sensitive", false);
  const auto attribute = a.string_arg(2, "attribute", "sort");
  std::vector<Value> items = items_of(v, budget);
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    const int c = compare(sort_key(x, attribute, case_sensitive), sort_key(y, attribute, case_sensitive));
    return reverse ? c > 0 : c < 0;
  });
  return Value::list(std::move(items));
}

Value f_sum(const Value& v, const CallArgs& a, Budget& budget) {
  a.check("sum", 2, {"attribute", "start"});
  const auto attribute = a.string_arg(0, "attribute", "sum");
  const Value* start = a.get(1, "start");
  Value total = start ? *start : Value::integer(0);
  for (const Value& item : items_of(v, budget))
    total = binary_op(BinaryOp::Add, total, attribute ? attribute_path(item, *attribute) : item, budget);
  return total;
}

Value f_tojson(const Value& v, const CallArgs& a, Budget& budget) {
  a.check("tojson", 5, {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonFormat format;
  format.ensure_ascii = a.bool_arg(0, "ensure_ascii", false);
  if (const Value* indent = a.get(1, "indent"); indent && !indent->is_none()) {
    if (indent->is_string()) {
      format.indent = indent->as_string();
    } else if (indent->is_int_like()) {
      format.indent = std::string(static_cast<std::size_t>(std::clamp<int64_t>(indent->as_int(), 0, 4096)), ' ');
    } else {
      throw Error("tojson(): indent must be an integer or a string");
    }
    format.item_separator = ",";
  }
  if (const Value* sep = a.get(2, "separators"); sep && !sep->is_none()) {
    if (sep->kind() != Value::Kind::List || sep->as_list().items.size() != 2 || !sep->as_list().items[0].is_string() ||
        !sep->as_list().items[1].is_string())
      throw Error("tojson(): separators must be a pair of strings");
    format.item_separator = sep->as_list().items[0].as_string();
    format.key_separator = sep->as_list().items[1].as_string();
  }
  format.sort_keys = a.bool_arg(3, "sort_keys", false);
  budget.charge(1);
  return Value::string(to_json(v, format));
}

Value f_unique(const Value& v, const CallArgs& a, Budget& budget) {
  a.check("unique", 2, {"case_sensitive", "attribute"});
  const bool case_sensitive = a.bool_arg(0, "case_sensitive", false);
  const auto attribute = a.string_arg(1, "attribute", "unique");
  std::vector<Value> out, seen;
  for (const Value& item : items_of(v, budget)) {
    Value key = sort_key(item, attribute, case_sensitive);
    budget.charge(seen.size());
    if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, key); })) continue;
    seen.push_back(std::move(key));
    out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value f_wordcount(const Value& v, const CallArgs& a, Budget&) {
  a.check("wordcount", 0, {});
  int64_t words = 0;
  bool in_word = false;
  for (char32_t c : text::decode(to_str(v))) {
    const bool word_char = c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                           (c > 0x7F && !text::is_space(c));
    if (word_char && !in_word) ++words;
    in_word = word_char;
  }
  return Value::integer(words);
}

struct NamedFilter {
  std::string_view name;
  FilterFn fn;
};

constexpr NamedFilter kFilters[] = {
    {"abs", f_abs},           {"attr", f_attr},       {"capitalize", f_capitalize},
    {"count", f_length},      {"d", f_default},       {"default", f_default},
    {"dictsort", f_dictsort}, {"e", f_escape},        {"escape", f_escape},
    {"first", f_first},       {"float", f_float},     {"indent", f_indent},
    {"int", f_int},           {"items", f_items},     {"join", f_join},
    {"last", f_last},         {"length", f_length},   {"list", f_list},
    {"lower", f_lower},       {"map", f_map},         {"max", f_max},
    {"min", f_min},           {"reject", f_reject},   {"rejectattr", f_rejectattr},
    {"replace", f_replace},   {"reverse", f_reverse}, {"round", f_round},
    {"safe", f_safe},         {"select", f_select},   {"selectattr", f_selectattr},
    {"sort", f_sort},         {"string", f_string},   {"sum", f_sum},
    {"title", f_title},       {"tojson", f_tojson},   {"trim", f_trim},
    {"unique", f_unique},     {"upper", f_upper},     {"wordcount", f_wordcount},
};

}  // namespace

Value apply_filter(std::string_view name, const Value& value, const CallArgs& args, Budget& budget) {
  for (const NamedFilter& f : kFilters)
    if (f.name == name) return f.fn(value, args, budget);
  throw Unsupported("no filter named '" + std::string(name) + "'");
}

}  // namespace lamina::model::jinja
