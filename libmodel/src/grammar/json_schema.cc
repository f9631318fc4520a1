// JSON schema to GBNF. Every text the grammar produces validates against the
// schema; the grammar may be narrower than the schema (objects carry only the
// listed properties, in the listed order; numbers have bounded digits;
// at most one space between tokens), which keeps generation finite.
#include "grammar/json_schema.h"

#include <cmath>
#include <algorithm>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>
#include <vector>

namespace lamina::model::grammar {
namespace {

using json = nlohmann::ordered_json;  // properties in the order the schema lists them

// Whitespace between tokens is at most one space: a model that may emit
// runs of blanks or newlines there can spend its whole budget on them.
const char* const kPrimitives = R"(ws ::= " "?
json-char ::= [^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})
json-string ::= "\"" json-char* "\""
json-int ::= "-"? ("0" | [1-9] [0-9]{0,15})
json-number ::= json-int ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})?
json-bool ::= "true" | "false"
json-null ::= "null"
json-value ::= json-object | json-array | json-string | json-number | json-bool | json-null
json-object ::= "{" ws (json-string ws ":" ws json-value (ws "," ws json-string ws ":" ws json-value)*)? ws "}"
json-array ::= "[" ws (json-value (ws "," ws json-value)*)? ws "]"
json-date ::= [0-9]{4} "-" ("0" [1-9] | "1" [0-2]) "-" ("0" [1-9] | [12] [0-9] | "3" [01])
json-time ::= ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ("." [0-9]{1,6})? ("Z" | [+-] ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9])
json-hex ::= [0-9a-f]
json-uuid ::= json-hex{8} "-" json-hex{4} "-" json-hex{4} "-" json-hex{4} "-" json-hex{12}
json-email ::= [a-zA-Z0-9_+-] [a-zA-Z0-9._+-]{0,31} "@" [a-zA-Z0-9] [a-zA-Z0-9-]{0,31} ("." [a-zA-Z]{2,8}){1,2}
)";

// Keywords that only annotate.
const std::set<std::string> kAnnotations = {"$schema", "$id", "$comment", "title", "description", "examples",
                                            "default", "deprecated", "readOnly", "writeOnly", "$defs", "definitions"};
const std::set<std::string> kKeywords = {"type", "properties", "required", "additionalProperties", "items",
                                         "minItems", "maxItems", "enum", "const", "anyOf", "oneOf", "allOf", "$ref",
                                         "format", "pattern", "minLength", "maxLength", "minimum", "maximum",
                                         "exclusiveMinimum", "exclusiveMaximum"};
constexpr int64_t kMaxCount = 4096;  // the GBNF parser's repetition bound
constexpr int kMaxDepth = 128;        // bounds the compiler's recursion

std::string json_literal(const json& value) { return gbnf_literal(value.dump(-1, ' ', false)); }

class Compiler {
 public:
  Compiler(const json& root, const JsonSchemaOptions& options, std::string prefix)
      : root_(root), options_(options), prefix_(std::move(prefix)) {}

  // The schema's rule is `prefix`root; the primitives are left out.
  std::string compile_rules() {
    const std::string top = visit(root_, "#");
    std::string out = prefix_ + "root ::= " + top + "\n";
    for (const auto& [name, body] : rules_) out += name + " ::= " + body + "\n";
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw GrammarError("JSON schema at " + where + ": " + what);
  }

  std::string add_rule(const std::string& body) {
    if (auto it = by_body_.find(body); it != by_body_.end()) return it->second;
    std::string name = prefix_ + "s" + std::to_string(rules_.size());
    rules_.emplace_back(name, body);
    by_body_.emplace(body, name);
    return name;
  }

  int64_t count(const json& s, const char* key, const std::string& where, int64_t fallback) const {
    const auto it = s.find(key);
    if (it == s.end()) return fallback;
    if (!it->is_number_integer() || it->get<int64_t>() < 0)
      fail(where, std::string("'") + key + "' must be a non-negative integer");
    if (it->get<int64_t>() > kMaxCount) fail(where, std::string("'") + key + "' above " + std::to_string(kMaxCount) + " is not supported");
    return it->get<int64_t>();
  }

  static std::string repeat(const std::string& item, int64_t min, int64_t max) {
    if (max < 0) return item + "{" + std::to_string(min) + ",}";
    return item + "{" + std::to_string(min) + "," + std::to_string(max) + "}";
  }

  std::string visit(const json& s, const std::string& where) {
    if (++depth_ > kMaxDepth) fail(where, "schemas nest more than " + std::to_string(kMaxDepth) + " deep");
    std::string rule = visit_schema(s, where);
    --depth_;
    return rule;
  }

  std::string visit_schema(const json& s, const std::string& where) {
    if (s.is_boolean()) {
      if (!s.get<bool>()) fail(where, "the schema `false` accepts no value");
      return "json-value";
    }
    if (!s.is_object()) fail(where, "a schema must be an object or a boolean");
    for (const auto& [key, value] : s.items())
      if (!kKeywords.count(key) && !kAnnotations.count(key)) fail(where, "the keyword '" + key + "' is not supported");
    if (const auto it = s.find("$ref"); it != s.end()) {
      if (s.size() > 1 && (s.contains("type") || s.contains("properties")))
        fail(where, "'$ref' beside other constraints is not supported");
      return reference(*it, where);
    }
    if (const auto it = s.find("const"); it != s.end()) return add_rule(json_literal(*it));
    if (const auto it = s.find("enum"); it != s.end()) {
      if (!it->is_array() || it->empty()) fail(where + "/enum", "must be a non-empty array");
      std::string body;
      for (const auto& v : *it) body += std::string(body.empty() ? "" : " | ") + json_literal(v);
      return add_rule(body);
    }
    for (const char* key : {"anyOf", "oneOf"}) {
      if (const auto it = s.find(key); it != s.end()) {
        if (!it->is_array() || it->empty()) fail(where + "/" + key, "must be a non-empty array");
        std::string body;
        for (std::size_t i = 0; i < it->size(); ++i)
          body += std::string(i ? " | " : "") + visit((*it)[i], where + "/" + key + "/" + std::to_string(i));
        return add_rule(body);
      }
    }
    if (const auto it = s.find("allOf"); it != s.end()) {
      if (!it->is_array() || it->size() != 1) fail(where + "/allOf", "only an allOf of one schema is supported");
      return visit((*it)[0], where + "/allOf/0");
    }
    const auto type = s.find("type");
    if (type == s.end()) {
      if (s.contains("properties") || s.contains("additionalProperties")) return object(s, where);
      if (s.contains("items")) return array(s, where);
      return "json-value";
    }
    if (type->is_array()) {
      if (type->empty()) fail(where + "/type", "an empty list of types accepts no value");
      std::string body;
      for (const auto& t : *type) {
        if (!t.is_string()) fail(where + "/type", "types must be strings");
        body += std::string(body.empty() ? "" : " | ") + typed(s, t.get<std::string>(), where);
      }
      return add_rule(body);
    }
    if (!type->is_string()) fail(where + "/type", "must be a string or a list of strings");
    return typed(s, type->get<std::string>(), where);
  }

  std::string reference(const json& ref, const std::string& where) {
    if (!ref.is_string()) fail(where + "/$ref", "must be a string");
    const std::string target = ref.get<std::string>();
    if (target.empty() || target[0] != '#') fail(where + "/$ref", "only references inside the schema (#...) are supported");
    if (auto it = by_ref_.find(target); it != by_ref_.end()) return it->second;
    const json* node = nullptr;
    try {
      node = &root_.at(json::json_pointer(target.substr(1)));
    } catch (const std::exception&) {
      fail(where + "/$ref", "'" + target + "' names nothing in the schema");
    }
    // Named before its body is compiled, so a recursive reference finds it.
    const std::string name = prefix_ + "ref" + std::to_string(by_ref_.size());
    by_ref_.emplace(target, name);
    const std::size_t slot = rules_.size();
    rules_.emplace_back(name, "");
    const std::string body = visit(*node, target);
    rules_[slot].second = body;
    return name;
  }

  std::string typed(const json& s, const std::string& type, const std::string& where) {
    if (type == "string") return string(s, where);
    if (type == "integer") return integer(s, where);
    if (type == "number") {
      for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
        if (s.contains(k)) fail(where, std::string("'") + k + "' on a number is not supported (only on integers)");
      return "json-number";
    }
    if (type == "boolean") return "json-bool";
    if (type == "null") return "json-null";
    if (type == "object") return object(s, where);
    if (type == "array") return array(s, where);
    fail(where + "/type", "unknown type '" + type + "'");
  }

  std::string string(const json& s, const std::string& where) {
    const int64_t min = count(s, "minLength", where, 0);
    const int64_t max = count(s, "maxLength", where, -1);
    if (max >= 0 && max < min) fail(where, "maxLength is below minLength: no string fits");
    const bool bounded = s.contains("minLength") || s.contains("maxLength");
    if (const auto it = s.find("format"); it != s.end()) {
      if (bounded || s.contains("pattern")) fail(where, "a format with length bounds or a pattern is not supported");
      static const std::map<std::string, std::string> formats = {
          {"date", "json-date"}, {"time", "json-time"}, {"date-time", "json-date \"T\" json-time"},
          {"uuid", "json-uuid"}, {"email", "json-email"}};
      const auto f = formats.find(it->is_string() ? it->get<std::string>() : "");
      if (f == formats.end()) fail(where + "/format", "the format " + it->dump() + " is not supported");
      return add_rule("\"\\\"\" " + f->second + " \"\\\"\"");
    }
    if (const auto it = s.find("pattern"); it != s.end()) {
      if (bounded) fail(where, "a pattern with length bounds is not supported");
      if (!it->is_string()) fail(where + "/pattern", "must be a string");
      return add_rule(std::string("\"\\\"\" ") + regex_to_gbnf(it->get<std::string>(), where + "/pattern") + " \"\\\"\"");
    }
    if (!bounded) return "json-string";
    return add_rule(std::string("\"\\\"\" ") + repeat("json-char", min, max) + " \"\\\"\"");
  }

  std::string integer(const json& s, const std::string& where) {
    std::optional<double> lo, hi;
    auto bound = [&](const char* key, double shift, std::optional<double>& out, bool upper) {
      const auto it = s.find(key);
      if (it == s.end()) return;
      if (!it->is_number()) fail(where + "/" + key, "must be a number");
      double v = upper ? std::floor(it->get<double>()) : std::ceil(it->get<double>());
      if (shift != 0 && v == it->get<double>()) v += shift;
      out = out ? (upper ? std::min(*out, v) : std::max(*out, v)) : v;
    };
    bound("minimum", 0, lo, false);
    bound("exclusiveMinimum", 1, lo, false);
    bound("maximum", 0, hi, true);
    bound("exclusiveMaximum", -1, hi, true);
    if (lo && hi) {
      if (*hi < *lo) fail(where, "the bounds leave no integer");
      if (*hi - *lo > 1024) fail(where, "integer ranges wider than 1024 values are not supported");
      std::string body;
      for (auto v = static_cast<int64_t>(*lo); v <= static_cast<int64_t>(*hi); ++v)
        body += (body.empty() ? "\"" : " | \"") + std::to_string(v) + "\"";
      return add_rule(body);
    }
    if (hi) fail(where, "an integer with only an upper bound is not supported");
    if (!lo) return "json-int";
    if (*lo == 0) return add_rule("\"0\" | [1-9] [0-9]{0,15}");
    if (*lo == 1) return add_rule("[1-9] [0-9]{0,15}");
    fail(where, "an integer minimum other than 0 or 1 needs a maximum too");
  }

  std::string array(const json& s, const std::string& where) {
    const int64_t min = count(s, "minItems", where, 0);
    const int64_t max = count(s, "maxItems", where, -1);
    if (max >= 0 && max < min) fail(where, "maxItems is below minItems: no array fits");
    const auto items = s.find("items");
    const std::string item = items == s.end() ? "json-value" : visit(*items, where + "/items");
    if (max == 0) return add_rule("\"[\" ws \"]\"");
    const std::string more = add_rule("ws \",\" ws " + item);
    std::string list = item + " " + repeat(more, std::max<int64_t>(min - 1, 0), max < 0 ? -1 : max - 1);
    if (min == 0) list = "(" + list + ")?";
    return add_rule("\"[\" ws " + list + " ws \"]\"");
  }

  std::string object(const json& s, const std::string& where) {
    const auto extra = s.find("additionalProperties");
    if (extra != s.end() && !extra->is_boolean() && !extra->is_object())
      fail(where + "/additionalProperties", "must be a boolean or a schema");
    const bool extra_true = extra != s.end() && extra->is_boolean() && extra->get<bool>();
    const auto props = s.find("properties");
    std::set<std::string> required;
    if (const auto r = s.find("required"); r != s.end()) {
      if (!r->is_array()) fail(where + "/required", "must be an array");
      for (const auto& name : *r) {
        if (!name.is_string()) fail(where + "/required", "names must be strings");
        if (props == s.end() || !props->contains(name.get<std::string>()))
          fail(where + "/required", "the required property '" + name.get<std::string>() + "' is not in properties");
        required.insert(name.get<std::string>());
      }
    }
    if (options_.strict && props != s.end() && (extra == s.end() || extra_true))
      fail(where, "strict mode needs \"additionalProperties\": false on every object with properties");
    if (props == s.end() || props->empty()) {
      if (extra != s.end() && extra->is_object()) {
        const std::string value = visit(*extra, where + "/additionalProperties");
        const std::string kv = add_rule("json-string ws \":\" ws " + value);
        return add_rule("\"{\" ws (" + kv + " (ws \",\" ws " + kv + ")*)? ws \"}\"");
      }
      if (extra != s.end() && !extra_true) return add_rule("\"{\" ws \"}\"");
      return "json-object";
    }
    if (!props->is_object()) fail(where + "/properties", "must be an object");
    // first[i]: properties i.. with none written yet; rest[i]: with one
    // written already, so each starts with a comma. Optional ones may be left out.
    std::vector<std::string> names, values;
    for (const auto& [name, sub] : props->items()) {
      names.push_back(name);
      values.push_back(visit(sub, where + "/properties/" + name));
    }
    const std::size_t n = names.size();
    std::string rest_next, first_next;  // "" stands for the empty sequence
    for (std::size_t i = n; i-- > 0;) {
      const std::string kv = gbnf_literal(json(names[i]).dump(-1, ' ', false)) + " ws \":\" ws " + values[i];
      const bool optional = !required.count(names[i]);
      std::string rest = "ws \",\" ws " + kv + (rest_next.empty() ? "" : " " + rest_next);
      if (optional) rest = "(" + rest + ")" + (rest_next.empty() ? "?" : " | " + rest_next);
      std::string first = kv + (rest_next.empty() ? "" : " " + rest_next);
      if (optional) first = "(" + first + ")" + (first_next.empty() ? "?" : " | " + first_next);
      rest_next = add_rule(rest);
      first_next = add_rule(first);
    }
    return add_rule("\"{\" ws " + first_next + " ws \"}\"");
  }

  const json& root_;
  JsonSchemaOptions options_;
  std::string prefix_;
  std::vector<std::pair<std::string, std::string>> rules_;
  std::map<std::string, std::string> by_body_;
  std::map<std::string, std::string> by_ref_;
  int depth_ = 0;
};

}  // namespace

std::string gbnf_literal(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      static const char* hex = "0123456789ABCDEF";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string compile_json_schema(std::string_view schema, const JsonSchemaOptions& options) {
  return compile_json_schema_rules(schema, options, "") + kPrimitives;
}

std::string compile_json_schema_rules(std::string_view schema, const JsonSchemaOptions& options,
                                      const std::string& prefix) {
  json root;
  try {
    root = json::parse(schema);
  } catch (const json::parse_error& e) {
    throw GrammarError(std::string("the JSON schema is not valid JSON: ") + e.what());
  }
  return Compiler(root, options, prefix).compile_rules();
}

const char* json_primitives_gbnf() { return kPrimitives; }

const std::string& json_object_gbnf() {
  static const std::string text = std::string("root ::= json-object\n") + kPrimitives;
  return text;
}

}  // namespace lamina::model::grammar
