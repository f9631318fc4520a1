#include "tool_calls/syntax.h"

#include <vector>

#include <nlohmann/json.hpp>

namespace lamina::model::tool_calls {
namespace {

bool is_scalar_char(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || c == '+' ||
         c == '.';
}

}  // namespace

std::size_t skip_space(std::string_view s, std::size_t pos) {
  while (pos < s.size() && is_json_space(s[pos])) ++pos;
  return pos;
}

std::string_view trim_end(std::string_view s) {
  while (!s.empty() && is_json_space(s.back())) s.remove_suffix(1);
  return s;
}

ValueSpan json_value_span(std::string_view s, std::size_t pos, SpanMemo* memo, std::size_t origin) {
  if (pos >= s.size()) return {Scan::Incomplete, s.size()};
  const char first = s[pos];
  if (first != '"' && first != '{' && first != '[') {
    if (first != '-' && !(first >= '0' && first <= '9') && first != 't' && first != 'f' && first != 'n')
      return {Scan::Malformed, pos};
    std::size_t i = pos;
    while (i < s.size() && is_scalar_char(s[i])) ++i;
    return {i == s.size() ? Scan::Incomplete : Scan::Complete, i};
  }
  SpanMemo local;
  SpanMemo& m = memo ? *memo : local;
  const std::size_t key = origin + pos;
  for (const auto& [start, span] : m.complete)
    if (start == key) return {span.status, span.end - origin};
  std::size_t i = pos;
  if (m.begin == key) {
    i = m.next - origin;
  } else {
    m.begin = key;
    m.closers.clear();
    m.in_string = m.escaped = false;
  }
  const auto complete = [&](std::size_t end) {
    m.complete.emplace_back(key, ValueSpan{Scan::Complete, origin + end});
    m.begin = std::string_view::npos;
    return ValueSpan{Scan::Complete, end};
  };
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (m.in_string) {
      if (m.escaped) {
        m.escaped = false;
      } else if (c == '\\') {
        m.escaped = true;
      } else if (c == '"') {
        m.in_string = false;
        if (m.closers.empty()) return complete(i + 1);
      }
    } else if (c == '"') {
      m.in_string = true;
    } else if (c == '{' || c == '[') {
      m.closers.push_back(c == '{' ? '}' : ']');
    } else if (c == '}' || c == ']') {
      if (m.closers.empty() || m.closers.back() != c) {
        m.begin = std::string_view::npos;
        return {Scan::Malformed, i};
      }
      m.closers.pop_back();
      if (m.closers.empty()) return complete(i + 1);
    }
  }
  m.next = origin + s.size();
  return {Scan::Incomplete, s.size()};
}

CallObject scan_call_object(std::string_view s, SpanMemo* memo, std::size_t origin) {
  CallObject out;
  const auto fail = [&](std::size_t at) {
    out.status = Scan::Malformed;
    out.end = at;
    return out;
  };
  std::size_t pos = 1;
  bool first = true;
  while (true) {
    pos = skip_space(s, pos);
    if (pos == s.size()) return out;
    if (s[pos] == '}' ) {
      out.status = Scan::Complete;
      out.end = pos + 1;
      return out;
    }
    if (!first) {
      if (s[pos] != ',') return fail(pos);
      pos = skip_space(s, pos + 1);
      if (pos == s.size()) return out;
    }
    first = false;
    if (s[pos] != '"') return fail(pos);
    const ValueSpan key_span = json_value_span(s, pos, memo, origin);
    if (key_span.status != Scan::Complete) return out;
    const std::string_view key = s.substr(pos + 1, key_span.end - pos - 2);
    pos = skip_space(s, key_span.end);
    if (pos == s.size()) return out;
    if (s[pos] != ':') return fail(pos);
    pos = skip_space(s, pos + 1);
    if (pos == s.size()) return out;
    const bool is_args = key == "arguments" || key == "parameters";
    if (is_args) {
      if (s[pos] != '{' || out.args_begin != std::string_view::npos) return fail(pos);
      out.args_begin = pos;
    }
    const ValueSpan value = json_value_span(s, pos, memo, origin);
    if (is_args) {
      out.args_end = value.end;
      out.args_complete = value.status == Scan::Complete;
    }
    if (value.status == Scan::Malformed) return fail(value.end);
    if (value.status == Scan::Incomplete) return out;
    if (key == "name") {
      if (s[pos] != '"' || out.name) return fail(pos);
      // The key's text was matched raw; the name is decoded (it may hold escapes).
      const auto name = nlohmann::json::parse(s.substr(pos, value.end - pos), nullptr, false);
      if (!name.is_string() || name.get_ref<const std::string&>().empty()) return fail(pos);
      out.name = name.get<std::string>();
    } else if (!is_args && key != "id" && key != "type") {
      return fail(pos);
    }
    pos = value.end;
  }
}

}  // namespace lamina::model::tool_calls
