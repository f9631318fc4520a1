// The pieces of tool-call output that every format shares: where a JSON value
// ends in text that may still be growing, and a call object {"name": ...,
// "arguments": {...}} read as far as it goes.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lamina::model::tool_calls {

enum class Scan { Complete, Incomplete, Malformed };

inline bool is_json_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
std::size_t skip_space(std::string_view s, std::size_t pos);
// `s` without its trailing JSON whitespace.
std::string_view trim_end(std::string_view s);

struct ValueSpan {
  Scan status = Scan::Incomplete;
  std::size_t end = 0;  // Complete: one past the value; Malformed: the offending byte
};

// What was learnt of the values of a text that keeps growing (a call being
// generated), so that each look at it reads only the new bytes. Positions are
// offsets into that whole text; valid while the text only grows.
struct SpanMemo {
  std::vector<std::pair<std::size_t, ValueSpan>> complete;  // by start
  std::size_t begin = std::string_view::npos;  // the start of the value being read
  std::size_t next = 0;                        // where its reading resumes
  std::vector<char> closers;
  bool in_string = false;
  bool escaped = false;
};

// The JSON value starting at s[pos] (no leading space): brackets and strings
// are matched, scalars read to their end. Incomplete when `s` ends inside it;
// the grammar of scalars is not checked. With a memo, `s` starts `origin`
// bytes into the growing text the memo describes.
ValueSpan json_value_span(std::string_view s, std::size_t pos, SpanMemo* memo = nullptr, std::size_t origin = 0);

// A call object read from s[0] == '{'. Keys: name (a string), arguments or
// parameters (an object), id and type (ignored); any other key, a name that is
// not a string or arguments that are not an object make it Malformed.
struct CallObject {
  Scan status = Scan::Incomplete;
  std::optional<std::string> name;
  std::size_t args_begin = std::string_view::npos;
  // One past the arguments read so far: their end once complete, the
  // offending byte when malformed inside them, else the end of `s`.
  std::size_t args_end = std::string_view::npos;
  bool args_complete = false;
  std::size_t end = 0;  // Complete: one past '}'; Malformed: the offending byte
};
CallObject scan_call_object(std::string_view s, SpanMemo* memo = nullptr, std::size_t origin = 0);

}  // namespace lamina::model::tool_calls
