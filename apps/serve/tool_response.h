// The output side of tool calling: the model's text split into content and
// OpenAI tool_calls, whole or streamed as OpenAI streams them (a call's first
// delta has its index, id, type and name; later deltas add argument text).
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "lamina/model/engine.h"
#include "lamina/model/tool_calls.h"
#include "openai_response.h"

namespace lamina::serve {

// "call_" and 24 letters or digits; Mistral's templates accept only ids of 9.
std::string make_tool_call_id(model::ToolCallFormat format, std::mt19937_64& bits);

// OpenAI's finish_reason once the output was parsed: "tool_calls" when it ended
// on its own with calls in it.
std::string_view tool_finish_reason(model::FinishReason reason, bool has_calls);

class ToolCallReply {
 public:
  // `parallel` false keeps the first call only; `random` seeds the call ids.
  ToolCallReply(model::ToolCallFormat format, bool parallel, uint64_t random);

  // A choice of the non-streamed response: its message gets the content
  // outside the calls (null when there are calls and nothing else) and tool_calls.
  void shape(ResponseJson& choice, const model::CompletionResult& result);

  // Streamed: the chunks for generated tokens, then the last ones and the
  // choice's finish (the stream's close comes after every choice's).
  std::string tokens(StreamEncoder& encoder, std::span<const model::TokenEvent> tokens);
  std::string finish(StreamEncoder& encoder, const model::CompletionResult& result);

 private:
  // The chunks of one delta, without calls beyond the first unless parallel.
  std::string chunks(StreamEncoder& encoder, model::ToolCallStreamDelta delta,
                     std::span<const model::TokenEvent> tokens);
  const std::string& id(std::size_t index);

  model::ToolCallFormat format_;
  bool parallel_;
  std::mt19937_64 bits_;
  model::ToolCallStream stream_;
  std::vector<std::string> ids_;
  bool any_call_ = false;
};

}  // namespace lamina::serve
