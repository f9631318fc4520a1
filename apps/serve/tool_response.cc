#include "tool_response.h"

#include <string_view>
#include <utility>

namespace lamina::serve {
namespace {

using json = ResponseJson;

bool kept(bool parallel, std::size_t index) { return parallel || index == 0; }

}  // namespace

std::string make_tool_call_id(model::ToolCallFormat format, std::mt19937_64& bits) {
  static constexpr std::string_view kAlphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  const bool mistral = format == model::ToolCallFormat::Mistral;
  std::string id = mistral ? "" : "call_";
  for (int i = 0; i < (mistral ? 9 : 24); ++i) id += kAlphabet[bits() % kAlphabet.size()];
  return id;
}

std::string_view tool_finish_reason(model::FinishReason reason, bool has_calls) {
  const std::string_view plain = openai_finish_reason(reason);
  return has_calls && plain == "stop" ? "tool_calls" : plain;
}

ToolCallReply::ToolCallReply(model::ToolCallFormat format, bool parallel, uint64_t random)
    : format_(format), parallel_(parallel), bits_(random), stream_(format) {}

const std::string& ToolCallReply::id(std::size_t index) {
  while (ids_.size() <= index) ids_.push_back(make_tool_call_id(format_, bits_));
  return ids_[index];
}

void ToolCallReply::shape(json& choice, const model::CompletionResult& result) {
  const model::ToolCallOutput out = model::parse_tool_calls(format_, result.text);
  json& message = choice["message"];
  json calls = json::array();
  for (std::size_t i = 0; i < out.calls.size() && kept(parallel_, i); ++i) {
    calls.push_back({{"id", id(i)},
                     {"type", "function"},
                     {"function", {{"name", out.calls[i].name}, {"arguments", out.calls[i].arguments}}}});
  }
  message["content"] = out.content.empty() && !calls.empty() ? json(nullptr) : json(out.content);
  if (!calls.empty()) message["tool_calls"] = std::move(calls);
  choice["finish_reason"] = tool_finish_reason(result.finish, !out.calls.empty());
}

std::string ToolCallReply::chunks(StreamEncoder& encoder, model::ToolCallStreamDelta delta,
                                  std::span<const model::TokenEvent> tokens) {
  std::string out;
  // Log-probabilities ride on the first chunk of the tokens they belong to.
  if (!delta.content.empty() || !tokens.empty()) out += encoder.delta({{"content", std::move(delta.content)}}, tokens);
  json calls = json::array();
  for (model::ToolCallDelta& d : delta.calls) {
    if (!kept(parallel_, d.index)) continue;
    any_call_ = true;
    json function = json::object();
    if (!d.name.empty()) function["name"] = std::move(d.name);
    function["arguments"] = std::move(d.arguments);
    json call = {{"index", d.index}};
    if (function.contains("name")) {
      call["id"] = id(d.index);
      call["type"] = "function";
    }
    call["function"] = std::move(function);
    calls.push_back(std::move(call));
  }
  if (!calls.empty()) out += encoder.delta({{"tool_calls", std::move(calls)}}, {});
  return out;
}

std::string ToolCallReply::tokens(StreamEncoder& encoder, std::span<const model::TokenEvent> tokens) {
  std::string text;
  for (const model::TokenEvent& t : tokens) text += t.text;
  return chunks(encoder, stream_.append(text), encoder.wants_logprobs() ? tokens : decltype(tokens){});
}

std::string ToolCallReply::finish(StreamEncoder& encoder, const model::CompletionResult& result) {
  model::ToolCallStreamDelta last = stream_.append(result.text_tail);
  model::ToolCallStreamDelta end = stream_.finish();
  last.content += end.content;
  for (model::ToolCallDelta& d : end.calls) {
    if (!last.calls.empty() && last.calls.back().index == d.index && d.name.empty())
      last.calls.back().arguments += d.arguments;
    else
      last.calls.push_back(std::move(d));
  }
  std::string out = chunks(encoder, std::move(last), {});
  model::CompletionResult rest = result;
  rest.text_tail.clear();  // parsed above
  return out + encoder.finish_choice(rest, tool_finish_reason(result.finish, any_call_));
}

}  // namespace lamina::serve
