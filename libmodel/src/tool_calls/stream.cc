// The tool-call stream: content outside calls goes out as it comes, less what
// may still turn into a marker; calls go out as their regions are read.
#include <utility>

#include "lamina/model/tool_calls.h"
#include "stop_filter.h"
#include "tool_calls/regions.h"
#include "tool_calls/syntax.h"
#include "utf8.h"

namespace lamina::model {

using namespace tool_calls;

namespace {

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// The word after `key` in a harmony header (up to a space or the next token).
std::string_view header_word(std::string_view header, std::string_view key) {
  const std::size_t at = header.find(key);
  if (at == std::string_view::npos) return {};
  const std::size_t begin = at + key.size();
  std::size_t end = begin;
  while (end < header.size() && !is_json_space(header[end]) && header[end] != '<') ++end;
  return header.substr(begin, end - begin);
}

}  // namespace

struct ToolCallStream::State {
  enum class Mode { Start, Text, Plain, Region, HarmonyHeader, HarmonyBody };
  enum class Body { Content, Hidden, Call };

  ToolCallFormat format;
  Mode mode = Mode::Start;
  std::string buf;          // text not consumed yet; in Region mode it starts at the region
  std::string held_space;   // the space before a region's marker: content again if it is no call
  bool drop_space = false;  // after a call, leading whitespace is dropped
  std::size_t calls_done = 0;
  std::vector<std::size_t> emitted;  // Region: argument bytes sent per call of the region
  SpanMemo memo;                     // Region: what the scans so far learnt of it
  Body body = Body::Content;
  StopFilter markers;

  explicit State(ToolCallFormat f) : format(f), markers(marker_strings(f)) {}

  static std::vector<std::string> marker_strings(ToolCallFormat f) {
    switch (f) {
      case ToolCallFormat::Hermes: return {std::string(kHermesOpen)};
      case ToolCallFormat::Mistral: return {std::string(kMistralMarker)};
      case ToolCallFormat::Harmony: return {"<|end|>", "<|call|>", "<|return|>"};
      case ToolCallFormat::Llama3Json: break;
    }
    return {};
  }

  void add_arguments(ToolCallStreamDelta& out, std::size_t index, std::string_view text) {
    if (text.empty()) return;
    if (out.calls.empty() || out.calls.back().index != index) out.calls.push_back({index, {}, {}});
    out.calls.back().arguments.append(text);
  }

  void open_call(ToolCallStreamDelta& out, std::size_t index, const std::string& name) {
    out.calls.push_back({index, name, {}});
  }

  // Sends what the region's calls have beyond what was sent; `final`: the
  // region is over, so incomplete arguments go out as they stand.
  void send_region_calls(ToolCallStreamDelta& out, const std::vector<RegionCall>& calls, bool final) {
    for (std::size_t i = 0; i < calls.size(); ++i) {
      const RegionCall& c = calls[i];
      if (i == emitted.size()) {
        open_call(out, calls_done + i, c.name);
        emitted.push_back(0);
      }
      std::string_view args = "{}";
      if (c.args_begin != std::string_view::npos) {
        args = std::string_view(buf).substr(c.args_begin, c.args_end - c.args_begin);
        if (!c.args_complete) {
          args = trim_end(args);
          if (!final) args = args.substr(0, utf8::complete_prefix(args));
        }
      } else if (!final) {
        continue;
      }
      if (args.size() > emitted[i]) {
        add_arguments(out, calls_done + i, args.substr(emitted[i]));
        emitted[i] = args.size();
      }
    }
  }

  // Drops the whitespace that follows a call; false when nothing else has come yet.
  bool skip_dropped_space() {
    if (!drop_space) return true;
    const std::size_t n = skip_space(buf, 0);
    buf.erase(0, n);
    if (buf.empty()) return false;
    drop_space = false;
    return true;
  }

  // Each step returns true when it changed mode or consumed a region, so that
  // another step may go further.
  bool step(ToolCallStreamDelta& out, bool at_end) {
    switch (mode) {
      case Mode::Start: return start(out, at_end);
      case Mode::Text: return text(out, at_end);
      case Mode::Plain: plain(out, at_end); return false;
      case Mode::Region: return region(out, at_end);
      case Mode::HarmonyHeader: return harmony_header(out, at_end);
      case Mode::HarmonyBody: return harmony_body(out, at_end);
    }
    return false;
  }

  bool start(ToolCallStreamDelta& out, bool at_end) {
    if (format == ToolCallFormat::Hermes || format == ToolCallFormat::Mistral) {
      mode = Mode::Text;
      return true;
    }
    const std::size_t first = skip_space(buf, 0);
    const std::string_view rest = std::string_view(buf).substr(first);
    if (rest.empty()) {
      if (at_end) plain(out, at_end);
      return false;
    }
    if (format == ToolCallFormat::Harmony) {
      // The prompt ends with <|start|>assistant: a header follows, opening with
      // its channel or (as gpt-oss's template writes calls) its recipient.
      constexpr std::string_view kRecipient = "to=";
      if (starts_with(kRecipient, rest) && !at_end) return false;
      mode = rest[0] == '<' || starts_with(rest, kRecipient) ? Mode::HarmonyHeader : Mode::Plain;
      if (mode == Mode::HarmonyHeader) buf.erase(0, first);
      return true;
    }
    if (rest[0] == '{' || starts_with(rest, kLlamaPythonTag)) {
      held_space = buf.substr(0, first);
      buf.erase(0, first);
      mode = Mode::Region;
      return true;
    }
    if (starts_with(kLlamaPythonTag, rest) && !at_end) return false;
    mode = Mode::Plain;
    return true;
  }

  // Content, held back where it may become a stop string or (at the end of a
  // complete prefix) be the whitespace before a call.
  void send_content(ToolCallStreamDelta& out, bool at_end) {
    std::size_t n = buf.size();
    if (!at_end) n = trim_end(std::string_view(buf).substr(0, markers.safe_length(buf))).size();
    out.content.append(buf, 0, n);
    buf.erase(0, n);
  }

  void plain(ToolCallStreamDelta& out, bool at_end) {
    if (skip_dropped_space() || at_end) {
      const std::size_t n = at_end ? buf.size() : utf8::complete_prefix(buf);
      out.content.append(buf, 0, n);
      buf.erase(0, n);
    }
  }

  bool text(ToolCallStreamDelta& out, bool at_end) {
    if (!skip_dropped_space()) return false;
    const std::size_t at = buf.find(format == ToolCallFormat::Hermes ? kHermesOpen : kMistralMarker);
    if (at == std::string::npos) {
      send_content(out, at_end);
      return false;
    }
    const std::size_t kept = trim_end(std::string_view(buf).substr(0, at)).size();
    out.content.append(buf, 0, kept);
    held_space = buf.substr(kept, at - kept);
    buf.erase(0, at);
    mode = Mode::Region;
    return true;
  }

  bool region(ToolCallStreamDelta& out, bool at_end) {
    Region r = scan_region(format, buf, memo);
    if (r.status == Scan::Incomplete) {
      if (!at_end) {
        send_region_calls(out, r.calls, false);
        return false;
      }
      r.status = r.calls.empty() ? Scan::Malformed : Scan::Complete;
      r.end = buf.size();
    }
    if (r.status == Scan::Malformed && r.calls.empty()) {
      // No call after all: the marker (Llama 3: everything) is text.
      const std::size_t marker = format == ToolCallFormat::Llama3Json ? buf.size() : marker_length(format);
      out.content += held_space;
      out.content.append(buf, 0, marker);
      buf.erase(0, marker);
      held_space.clear();
      memo = {};
      mode = format == ToolCallFormat::Llama3Json ? Mode::Plain : Mode::Text;
      return true;
    }
    send_region_calls(out, r.calls, true);
    calls_done += r.calls.size();
    emitted.clear();
    memo = {};
    held_space.clear();
    buf.erase(0, r.end);
    drop_space = true;
    mode = format == ToolCallFormat::Llama3Json ? Mode::Plain : Mode::Text;
    return true;
  }

  bool harmony_header(ToolCallStreamDelta& out, bool at_end) {
    const std::size_t at = buf.find(kHarmonyMessage);
    if (at == std::string::npos) {
      if (at_end) {
        mode = Mode::Plain;
        return true;
      }
      return false;
    }
    const std::string_view header(buf.data(), at);
    const std::string_view recipient = header_word(header, "to=");
    const std::string_view channel = header_word(header, "<|channel|>");
    if (starts_with(recipient, kHarmonyFunctions) && recipient.size() > kHarmonyFunctions.size()) {
      body = Body::Call;
      open_call(out, calls_done, std::string(recipient.substr(kHarmonyFunctions.size())));
      emitted.assign(1, 0);
      drop_space = true;
    } else {
      body = recipient.empty() && channel != "analysis" ? Body::Content : Body::Hidden;
    }
    buf.erase(0, at + kHarmonyMessage.size());
    mode = Mode::HarmonyBody;
    return true;
  }

  bool harmony_body(ToolCallStreamDelta& out, bool at_end) {
    if (body == Body::Call && !skip_dropped_space() && !at_end) return false;
    std::size_t end = std::string::npos, marker = 0;
    for (const char* m : {"<|end|>", "<|call|>", "<|return|>"}) {
      const std::size_t at = buf.find(m);
      if (at < end) {
        end = at;
        marker = std::char_traits<char>::length(m);
      }
    }
    const bool over = end != std::string::npos || at_end;
    std::string_view text(buf);
    if (end != std::string::npos) text = text.substr(0, end);
    if (!over) text = text.substr(0, markers.safe_length(buf));
    std::size_t used = text.size();
    if (body == Body::Content) {
      out.content.append(text);
    } else if (body == Body::Call) {
      std::string_view args = trim_end(text);
      if (!over) args = args.substr(0, utf8::complete_prefix(args));
      used = over ? text.size() : args.size();
      if (over && emitted[0] == 0 && args.empty()) args = "{}";
      add_arguments(out, calls_done, args);
      emitted[0] += args.size();
    }
    if (!over) {
      buf.erase(0, used);
      return false;
    }
    buf.erase(0, end == std::string::npos ? buf.size() : end + marker);
    if (body == Body::Call) ++calls_done;
    drop_space = false;
    mode = Mode::HarmonyHeader;
    return true;
  }
};

ToolCallStream::ToolCallStream(ToolCallFormat format) : state_(std::make_unique<State>(format)) {}
ToolCallStream::~ToolCallStream() = default;
ToolCallStream::ToolCallStream(ToolCallStream&&) noexcept = default;
ToolCallStream& ToolCallStream::operator=(ToolCallStream&&) noexcept = default;

ToolCallStreamDelta ToolCallStream::append(std::string_view piece) {
  ToolCallStreamDelta out;
  state_->buf.append(piece);
  while (state_->step(out, false)) {
  }
  return out;
}

ToolCallStreamDelta ToolCallStream::finish() {
  ToolCallStreamDelta out;
  while (state_->step(out, true)) {
  }
  return out;
}

ToolCallOutput parse_tool_calls(ToolCallFormat format, std::string_view text) {
  ToolCallStream stream(format);
  ToolCallOutput out;
  for (ToolCallStreamDelta d : {stream.append(text), stream.finish()}) {
    out.content += d.content;
    for (ToolCallDelta& c : d.calls) {
      if (c.index == out.calls.size()) out.calls.push_back({std::move(c.name), {}});
      out.calls[c.index].arguments += c.arguments;
    }
  }
  return out;
}

std::optional<ToolCallFormat> detect_tool_call_format(std::string_view chat_template) {
  const auto has = [&](std::string_view marker) { return chat_template.find(marker) != std::string_view::npos; };
  // Harmony first: its templates also mention JSON; Mistral's marker is unique to it.
  if (has("<|channel|>") && has("<|call|>")) return ToolCallFormat::Harmony;
  if (has("[TOOL_CALLS]")) return ToolCallFormat::Mistral;
  if (has("<tool_call>")) return ToolCallFormat::Hermes;
  if (has("<|start_header_id|>") && has("\"parameters\"") && has("tools")) return ToolCallFormat::Llama3Json;
  return std::nullopt;
}

std::string_view tool_call_format_name(ToolCallFormat format) {
  static constexpr std::pair<ToolCallFormat, std::string_view> kNames[] = {
      {ToolCallFormat::Hermes, "hermes"},
      {ToolCallFormat::Llama3Json, "llama3-json"},
      {ToolCallFormat::Mistral, "mistral"},
      {ToolCallFormat::Harmony, "harmony"},
  };
  for (const auto& [f, name] : kNames)
    if (f == format) return name;
  return "unknown";
}

bool tool_call_markers_are_special(ToolCallFormat format) {
  return format == ToolCallFormat::Mistral || format == ToolCallFormat::Harmony;
}

}  // namespace lamina::model
