// The tool-calling fields of a chat request: tools, tool_choice,
// parallel_tool_calls and the assistant tool_calls of the history, checked
// and shaped as chat templates expect them (transformers' conventions).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "lamina/model/chat_prompt.h"
#include "lamina/model/engine.h"
#include "lamina/model/model.h"
#include "lamina/model/tool_calls.h"

namespace lamina::serve {

struct ToolRequest {
  enum class Choice { Auto, None, Required, Named };
  Choice choice = Choice::Auto;
  std::string function;       // Named: the function that must be called
  bool parallel = true;       // parallel_tool_calls: false keeps the first call only
  std::string tools_json;     // the tools as the template gets them; empty: none offered
  // Whether the output is parsed for calls: tools were offered.
  bool offered() const { return !tools_json.empty(); }
};

// Reads tools, tool_choice and parallel_tool_calls; throws ApiError (400)
// naming the field. With tool_choice none the tools are not offered.
ToolRequest parse_tool_request(const nlohmann::json& body);

// Shapes the fields of messages[index] other than role and content for the
// template: each assistant tool_calls[].function.arguments given as a JSON text
// (as OpenAI clients send it) becomes the object it holds, in the text's key
// order, as transformers passes it. Throws ApiError for tool_calls that are not
// OpenAI's shape.
void shape_tool_calls(nlohmann::ordered_json& fields, std::size_t index);

// tools.tools_json again, read from the request's text so that the template
// sees each tool's keys (a schema's properties) in the order the client wrote
// them; "" when the tools are not offered. `raw_body` passed parse_json_body.
std::string tools_in_client_order(const ToolRequest& tools, std::string_view raw_body);

// Refuses what the model cannot do with these tools (no known call format:
// `format` nullopt; a tool's parameters the schema compiler refuses) and
// returns the grammar that tool_choice required or a named function constrains
// decoding to (null for auto). Its vocabulary must admit the format's marker
// tokens (model::tool_call_marker_tokens).
std::shared_ptr<const model::Grammar> constrain_tool_choice(const ToolRequest& tools,
                                                            const std::optional<model::ToolCallFormat>& format,
                                                            model::CompletionRequest& request);

// The call format the model's own chat template teaches; nullopt when the chat
// format is not the model's template or the template teaches none we parse.
std::optional<model::ToolCallFormat> tool_call_format_of(const model::Model& model, const model::ChatPrompt& chat);

}  // namespace lamina::serve
