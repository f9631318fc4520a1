// The call regions of the JSON-based formats: Hermes' <tool_call> block,
// Llama 3's leading call objects and Mistral's [TOOL_CALLS] list, each read as
// far as the text goes.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "lamina/model/tool_calls.h"
#include "tool_calls/syntax.h"

namespace lamina::model::tool_calls {

inline constexpr std::string_view kHermesOpen = "<tool_call>";
inline constexpr std::string_view kHermesClose = "</tool_call>";
inline constexpr std::string_view kMistralMarker = "[TOOL_CALLS]";
inline constexpr std::string_view kMistralArgs = "[ARGS]";
inline constexpr std::string_view kLlamaPythonTag = "<|python_tag|>";
inline constexpr std::string_view kHarmonyChannel = "<|channel|>";
inline constexpr std::string_view kHarmonyConstrain = "<|constrain|>";
inline constexpr std::string_view kHarmonyMessage = "<|message|>";
inline constexpr std::string_view kHarmonyFunctions = "functions.";

// A call whose name and start of arguments are known. Offsets are into the
// region; args_begin == npos: the call object has no arguments (they are {}).
struct RegionCall {
  std::string name;
  std::size_t args_begin = std::string_view::npos;
  std::size_t args_end = std::string_view::npos;
  bool args_complete = false;
};

struct Region {
  // Complete: the region ends at `end`. Malformed: it breaks at `end` (the
  // calls before stand; with none, the region is no call). Incomplete: more
  // text is needed.
  Scan status = Scan::Incomplete;
  std::vector<RegionCall> calls;
  std::size_t end = 0;
};

// `region` starts with the format's marker (Llama 3: with '{' or the python tag).
// `memo` carries what earlier scans of the same, shorter region learnt.
Region scan_region(ToolCallFormat format, std::string_view region, SpanMemo& memo);
// How much of a region that turned out to be no call is the marker, shown as text.
std::size_t marker_length(ToolCallFormat format);

}  // namespace lamina::model::tool_calls
