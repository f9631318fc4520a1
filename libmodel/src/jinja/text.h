// Python's str operations over UTF-8 text. Templates index, slice and measure
// strings in code points, as Python does; a byte that starts no valid UTF-8
// sequence counts as one code point of its own and is kept unchanged.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lamina::model::jinja::text {

std::u32string decode(std::string_view s);
std::string encode(std::u32string_view code_points);
void append_utf8(std::string& out, char32_t c);
bool is_ascii(std::string_view s);
// len(s) in code points.
int64_t length(std::string_view s);
// str.isspace() for one code point.
bool is_space(char32_t c);

// str.strip / lstrip / rstrip; `chars` absent strips whitespace.
std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right);
// str.split / str.rsplit; `sep` absent splits on runs of whitespace. Throws
// jinja::Error for an empty separator.
std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit);
std::vector<std::string> rsplit(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit);
// str.replace; count < 0 replaces every occurrence.
std::string replace(std::string_view s, std::string_view old, std::string_view with, int64_t count);
// str.find / str.rfind / str.count, in code points.
int64_t find(std::string_view s, std::string_view sub, bool reverse);
int64_t count(std::string_view s, std::string_view sub);

std::string upper(std::string_view s);
std::string lower(std::string_view s);
// str.capitalize(): first character title-cased, the rest lower-cased.
std::string capitalize(std::string_view s);
// str.title(): each run of cased letters starts upper-case.
std::string python_title(std::string_view s);
// Jinja's |title filter: words split at whitespace and -({[< start upper-case.
std::string jinja_title(std::string_view s);
bool is_upper(std::string_view s);
bool is_lower(std::string_view s);

// repr(float) and str(float) in Python: shortest round-trip digits, "1.0", "1e+16".
std::string float_repr(double d);
// repr(str): single quotes unless the text holds ' and no ".
std::string python_quote(std::string_view s);
// A JSON string as Python's json.dumps(ensure_ascii=False) writes it.
std::string json_quote(std::string_view s);

}  // namespace lamina::model::jinja::text
