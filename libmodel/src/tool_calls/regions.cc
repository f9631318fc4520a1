#include "tool_calls/regions.h"

namespace lamina::model::tool_calls {
namespace {

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

Region malformed(Region r, std::size_t at) {
  r.status = Scan::Malformed;
  r.end = at;
  return r;
}

// Reads the call object at region[pos] == '{' into `r`; false when the region
// ends there (r.status set), true when a complete call was read (pos moved past it).
bool read_object(std::string_view region, std::size_t& pos, Region& r, SpanMemo& memo) {
  const CallObject obj = scan_call_object(region.substr(pos), &memo, pos);
  if (obj.name && (obj.args_begin != std::string_view::npos || obj.status == Scan::Complete)) {
    RegionCall call{*obj.name};
    if (obj.args_begin != std::string_view::npos) {
      call.args_begin = pos + obj.args_begin;
      call.args_end = pos + obj.args_end;
      call.args_complete = obj.args_complete;
    }
    r.calls.push_back(std::move(call));
  }
  if (obj.status == Scan::Malformed) {
    r = malformed(std::move(r), pos + obj.end);
    return false;
  }
  if (obj.status == Scan::Incomplete) return false;
  if (!obj.name) {
    r = malformed(std::move(r), pos);
    return false;
  }
  pos += obj.end;
  return true;
}

Region scan_hermes(std::string_view region, SpanMemo& memo) {
  Region r;
  std::size_t pos = skip_space(region, kHermesOpen.size());
  if (pos == region.size()) return r;
  if (region[pos] != '{') return malformed(std::move(r), pos);
  if (!read_object(region, pos, r, memo)) return r;
  const std::size_t after = skip_space(region, pos);
  const std::string_view rest = region.substr(after);
  if (starts_with(rest, kHermesClose)) {
    r.status = Scan::Complete;
    r.end = after + kHermesClose.size();
  } else if (!starts_with(kHermesClose, rest)) {
    r.status = Scan::Complete;
    r.end = pos;
  }
  return r;
}

Region scan_llama(std::string_view region, SpanMemo& memo) {
  Region r;
  std::size_t pos = starts_with(region, kLlamaPythonTag) ? kLlamaPythonTag.size() : 0;
  while (true) {
    pos = skip_space(region, pos);
    if (pos == region.size()) return r;
    if (region[pos] != '{') return malformed(std::move(r), pos);
    if (!read_object(region, pos, r, memo)) return r;
    const std::size_t next = skip_space(region, pos);
    if (next == region.size()) return r;
    if (region[next] != ';') {
      r.status = Scan::Complete;
      r.end = pos;
      return r;
    }
    pos = next + 1;
  }
}

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
         c == '.';
}

// [TOOL_CALLS]name[ARGS]{...}
Region scan_mistral_named(std::string_view region, std::size_t pos, SpanMemo& memo) {
  Region r;
  std::size_t i = pos;
  while (i < region.size() && is_name_char(region[i])) ++i;
  if (i == region.size()) return r;
  if (i == pos) return malformed(std::move(r), pos);
  const std::string_view rest = region.substr(i);
  if (!starts_with(rest, kMistralArgs)) {
    if (starts_with(kMistralArgs, rest)) return r;
    return malformed(std::move(r), i);
  }
  const std::size_t a = skip_space(region, i + kMistralArgs.size());
  if (a == region.size()) return r;
  if (region[a] != '{') return malformed(std::move(r), a);
  const ValueSpan v = json_value_span(region, a, &memo);
  r.calls.push_back({std::string(region.substr(pos, i - pos)), a, v.end, v.status == Scan::Complete});
  if (v.status == Scan::Incomplete) return r;
  r.status = v.status;
  r.end = v.end;
  return r;
}

Region scan_mistral(std::string_view region, SpanMemo& memo) {
  std::size_t pos = skip_space(region, kMistralMarker.size());
  if (pos == region.size()) return {};
  if (region[pos] != '[') return scan_mistral_named(region, pos, memo);
  Region r;
  ++pos;
  for (bool first = true;; first = false) {
    pos = skip_space(region, pos);
    if (pos == region.size()) return r;
    if (region[pos] == ']' && !first) {
      r.status = Scan::Complete;
      r.end = pos + 1;
      return r;
    }
    if (!first) {
      if (region[pos] != ',') return malformed(std::move(r), pos);
      pos = skip_space(region, pos + 1);
      if (pos == region.size()) return r;
    }
    if (region[pos] != '{') return malformed(std::move(r), pos);
    if (!read_object(region, pos, r, memo)) return r;
  }
}

}  // namespace

Region scan_region(ToolCallFormat format, std::string_view region, SpanMemo& memo) {
  switch (format) {
    case ToolCallFormat::Hermes: return scan_hermes(region, memo);
    case ToolCallFormat::Llama3Json: return scan_llama(region, memo);
    case ToolCallFormat::Mistral: return scan_mistral(region, memo);
    case ToolCallFormat::Harmony: break;
  }
  return malformed({}, 0);
}

std::size_t marker_length(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::Hermes: return kHermesOpen.size();
    case ToolCallFormat::Mistral: return kMistralMarker.size();
    default: return 0;
  }
}

}  // namespace lamina::model::tool_calls
