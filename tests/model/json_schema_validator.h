// A small JSON-schema validator for the tests: the keywords the grammar
// compiler supports, checked the plain way on a parsed document, so that
// what the grammar lets through is judged by something else than itself.
// Include it first: it uses <regex>, where GCC 12 with -fsanitize=address at
// -O2 reports a false -Wmaybe-uninitialized (the std::function of a
// lookahead state in libstdc++'s regex compiler); the warning is placed in
// <functional>'s lines, so it is silenced before any standard header comes in
// and stays off for the rest of the including test.
#pragma once
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <nlohmann/json.hpp>

#include <cmath>
#include <regex>
#include <set>
#include <string>

namespace lamina::model::schema_test {

using nlohmann::json;

class Validator {
 public:
  explicit Validator(const json& root) : root_(root) {}

  // "" when `value` is valid, else where and why it is not.
  std::string check(const json& value) const { return check(value, root_, "$"); }

 private:
  static std::size_t code_points(const std::string& s) {
    std::size_t n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80;
    return n;
  }

  static bool has_type(const json& v, const std::string& t) {
    if (t == "string") return v.is_string();
    if (t == "integer") return v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
    if (t == "number") return v.is_number();
    if (t == "boolean") return v.is_boolean();
    if (t == "null") return v.is_null();
    if (t == "object") return v.is_object();
    if (t == "array") return v.is_array();
    return false;
  }

  static bool format_ok(const std::string& format, const std::string& s) {
    static const std::string date = R"(\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01]))";
    static const std::string time = R"(([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d+)?(Z|[+-]([01]\d|2[0-3]):[0-5]\d))";
    std::string re;
    if (format == "date") re = date;
    else if (format == "time") re = time;
    else if (format == "date-time") re = date + "T" + time;
    else if (format == "uuid") re = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}";
    else if (format == "email") re = R"([^@\s]+@[^@\s]+\.[A-Za-z]+)";
    else return false;
    return std::regex_match(s, std::regex(re));
  }

  std::string check(const json& v, const json& s, const std::string& at) const {
    if (s.is_boolean()) return s.get<bool>() ? "" : at + ": schema false";
    if (s.contains("$ref")) return check(v, root_.at(json::json_pointer(s["$ref"].get<std::string>().substr(1))), at);
    if (s.contains("const") && v != s["const"]) return at + ": not the const";
    if (s.contains("enum")) {
      bool found = false;
      for (const auto& e : s["enum"]) found = found || e == v;
      if (!found) return at + ": not in the enum";
    }
    if (s.contains("anyOf")) {
      bool any = false;
      for (const auto& sub : s["anyOf"]) any = any || check(v, sub, at).empty();
      if (!any) return at + ": matches no anyOf branch";
    }
    if (s.contains("oneOf")) {
      int n = 0;
      for (const auto& sub : s["oneOf"]) n += check(v, sub, at).empty();
      if (n != 1) return at + ": matches " + std::to_string(n) + " oneOf branches";
    }
    if (s.contains("allOf"))
      for (const auto& sub : s["allOf"])
        if (auto e = check(v, sub, at); !e.empty()) return e;
    if (s.contains("type")) {
      bool ok = false;
      if (s["type"].is_array()) {
        for (const auto& t : s["type"]) ok = ok || has_type(v, t.get<std::string>());
      } else {
        ok = has_type(v, s["type"].get<std::string>());
      }
      if (!ok) return at + ": wrong type " + v.dump();
    }
    if (v.is_string()) {
      const std::string str = v.get<std::string>();
      if (s.contains("minLength") && code_points(str) < s["minLength"].get<std::size_t>()) return at + ": too short";
      if (s.contains("maxLength") && code_points(str) > s["maxLength"].get<std::size_t>()) return at + ": too long";
      if (s.contains("format") && !format_ok(s["format"].get<std::string>(), str)) return at + ": bad format " + str;
      if (s.contains("pattern") && !std::regex_search(str, std::regex(s["pattern"].get<std::string>())))
        return at + ": does not match the pattern: " + str;
    }
    if (v.is_number()) {
      const double x = v.get<double>();
      if (s.contains("minimum") && x < s["minimum"].get<double>()) return at + ": below minimum";
      if (s.contains("maximum") && x > s["maximum"].get<double>()) return at + ": above maximum";
      if (s.contains("exclusiveMinimum") && x <= s["exclusiveMinimum"].get<double>()) return at + ": not above exclusiveMinimum";
      if (s.contains("exclusiveMaximum") && x >= s["exclusiveMaximum"].get<double>()) return at + ": not below exclusiveMaximum";
    }
    if (v.is_array()) {
      if (s.contains("minItems") && v.size() < s["minItems"].get<std::size_t>()) return at + ": too few items";
      if (s.contains("maxItems") && v.size() > s["maxItems"].get<std::size_t>()) return at + ": too many items";
      if (s.contains("items"))
        for (std::size_t i = 0; i < v.size(); ++i)
          if (auto e = check(v[i], s["items"], at + "[" + std::to_string(i) + "]"); !e.empty()) return e;
    }
    if (v.is_object()) {
      if (s.contains("required"))
        for (const auto& name : s["required"])
          if (!v.contains(name.get<std::string>())) return at + ": lacks " + name.get<std::string>();
      const json props = s.value("properties", json::object());
      for (const auto& [key, value] : v.items()) {
        if (props.contains(key)) {
          if (auto e = check(value, props[key], at + "." + key); !e.empty()) return e;
        } else if (s.contains("additionalProperties")) {
          if (auto e = check(value, s["additionalProperties"], at + "." + key); !e.empty()) return e;
        }
      }
    }
    return "";
  }

  const json& root_;
};

}  // namespace lamina::model::schema_test
