// Tool calling in the API: tools, tool_choice and parallel_tool_calls checked,
// history tool_calls shaped for templates, refusals, and the output as tool_calls,
// whole and streamed (the streamed deltas reassemble to the whole response).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../model/chat_template_real_templates.h"
#include "api_error.h"
#include "json_body.h"
#include "lamina/model/grammar.h"
#include "lamina/model/chat_template.h"
#include "openai_request.h"
#include "openai_response.h"
#include "sse_events.h"
#include "tool_request.h"
#include "tool_response.h"

namespace lamina::serve {
namespace {

using json = nlohmann::json;

constexpr const char* kTools =
    R"([{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}},
        {"type": "function", "function": {"name": "get_time"}}])";

ToolRequest tool_request(const std::string& extra) {
  return parse_tool_request(json::parse(std::string(R"({"tools": )") + kTools + extra + "}"));
}

ApiError request_error(const std::string& body) {
  try {
    parse_tool_request(json::parse(body));
  } catch (const ApiError& e) {
    return e;
  }
  ADD_FAILURE() << "accepted: " << body;
  return ApiError(200, "");
}

TEST(ToolRequest, ChoicesAndParallel) {
  const ToolRequest plain = tool_request("");
  EXPECT_EQ(plain.choice, ToolRequest::Choice::Auto);
  EXPECT_TRUE(plain.parallel);
  EXPECT_TRUE(plain.offered());
  EXPECT_EQ(json::parse(plain.tools_json), json::parse(kTools));
  EXPECT_EQ(tool_request(R"(, "tool_choice": "required")").choice, ToolRequest::Choice::Required);
  const ToolRequest named = tool_request(R"(, "tool_choice": {"type": "function", "function": {"name": "get_time"}})");
  EXPECT_EQ(named.choice, ToolRequest::Choice::Named);
  EXPECT_EQ(named.function, "get_time");
  EXPECT_FALSE(tool_request(R"(, "parallel_tool_calls": false)").parallel);
  // none: the template is not offered the tools, and the output is not parsed.
  EXPECT_FALSE(tool_request(R"(, "tool_choice": "none")").offered());
  EXPECT_FALSE(parse_tool_request(json::parse(R"({"tools": []})")).offered());
  EXPECT_FALSE(parse_tool_request(json::parse(R"({"tool_choice": "auto"})")).offered());
}

TEST(ToolRequest, BadFieldsAreNamed) {
  const std::string tools = std::string(R"({"tools": )") + kTools;
  EXPECT_EQ(request_error(tools + R"(, "tool_choice": "always"})").param(), "tool_choice");
  EXPECT_EQ(request_error(tools + R"(, "tool_choice": {"type": "function", "function": {"name": "nope"}}})").param(),
            "tool_choice");
  EXPECT_EQ(request_error(tools + R"(, "tool_choice": 3})").param(), "tool_choice");
  EXPECT_EQ(request_error(tools + R"(, "parallel_tool_calls": "yes"})").param(), "parallel_tool_calls");
  EXPECT_EQ(request_error(R"({"tool_choice": "required"})").param(), "tool_choice");
  EXPECT_EQ(request_error(R"({"tools": {}})").param(), "tools");
  EXPECT_EQ(request_error(R"({"tools": [{"type": "retrieval"}]})").param(), "tools[0].type");
  EXPECT_EQ(request_error(R"({"tools": [{"type": "function", "function": {"name": ""}}]})").param(),
            "tools[0].function.name");
  EXPECT_EQ(request_error(R"({"tools": [{"type": "function", "function": {"name": "f"}},
                                        {"type": "function", "function": {"name": "f"}}]})").param(),
            "tools[1].function.name");
}

TEST(ToolRequest, HistoryArgumentsBecomeObjects) {
  using ordered = nlohmann::ordered_json;
  ordered fields = ordered::parse(R"({"content": null, "tool_calls": [
      {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{\"x\": [1, 2], \"b\": {\"z\": 0, \"a\": 1}}"}},
      {"id": "b", "type": "function", "function": {"name": "g", "arguments": ""}},
      {"id": "c", "type": "function", "function": {"name": "h", "arguments": {"y": true}}}]})");
  shape_tool_calls(fields, 1);
  // The objects keep the order of the client's text.
  EXPECT_EQ(fields["tool_calls"][0]["function"]["arguments"].dump(), R"({"x":[1,2],"b":{"z":0,"a":1}})");
  EXPECT_EQ(fields["tool_calls"][1]["function"]["arguments"], ordered::object());
  EXPECT_EQ(fields["tool_calls"][2]["function"]["arguments"], ordered::parse(R"({"y": true})"));
  EXPECT_FALSE(fields.contains("content"));  // the message's content: "" rather than null

  for (const auto& [bad, param] : std::vector<std::pair<std::string, std::string>>{
           {R"({"tool_calls": {}})", "messages[1].tool_calls"},
           {R"({"tool_calls": [{"function": {"name": "f", "arguments": "{oops"}}]})",
            "messages[1].tool_calls[0].function.arguments"},
           {R"({"tool_calls": [{"function": {"name": "f", "arguments": "[1]"}}]})",
            "messages[1].tool_calls[0].function.arguments"},
           {R"({"tool_calls": [{"function": {"arguments": "{}"}}]})", "messages[1].tool_calls[0].function.name"},
           {R"({"tool_calls": [{"id": "x"}]})", "messages[1].tool_calls[0].function"}}) {
    ordered f = ordered::parse(bad);
    try {
      shape_tool_calls(f, 1);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status(), 400);
      EXPECT_EQ(e.param(), param) << bad;
    }
  }
}

TEST(ToolRequest, WhatCannotBeHonouredIsRefused) {
  model::CompletionRequest req;
  const ToolRequest tools = tool_request("");
  try {
    constrain_tool_choice(tools, std::nullopt, req);
    ADD_FAILURE() << "tools accepted without a call format";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.param(), "tools");
  }
  // required and a named function constrain the output to calls.
  for (const char* choice : {R"("required")", R"({"type": "function", "function": {"name": "get_time"}})"}) {
    const ToolRequest t = tool_request(std::string(R"(, "tool_choice": )") + choice);
    EXPECT_NE(constrain_tool_choice(t, model::ToolCallFormat::Hermes, req), nullptr) << choice;
  }
  EXPECT_EQ(constrain_tool_choice(tools, model::ToolCallFormat::Hermes, req), nullptr);  // auto: free text
  // A schema keyword the compiler does not know is a 400 naming the tool's parameters.
  const ToolRequest odd = parse_tool_request(json::parse(R"({"tool_choice": "required", "tools": [
      {"type": "function", "function": {"name": "a"}},
      {"type": "function", "function": {"name": "b", "parameters": {"type": "object", "properties":
        {"x": {"type": "string", "contentEncoding": "base64"}}}}}]})"));
  try {
    constrain_tool_choice(odd, model::ToolCallFormat::Llama3Json, req);
    ADD_FAILURE() << "an unsupported schema keyword accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_EQ(e.param(), "tools[1].function.parameters");
    EXPECT_NE(std::string(e.what()).find("contentEncoding"), std::string::npos) << e.what();
  }
  // function.strict is honoured: an open object is refused.
  const ToolRequest strict = parse_tool_request(json::parse(R"({"tool_choice": "required", "tools": [
      {"type": "function", "function": {"name": "a", "strict": true, "parameters": {"type": "object",
        "properties": {"x": {"type": "integer"}}}}}]})"));
  try {
    constrain_tool_choice(strict, model::ToolCallFormat::Hermes, req);
    ADD_FAILURE() << "strict accepted an open object";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.param(), "tools[0].function.parameters");
    EXPECT_NE(std::string(e.what()).find("additionalProperties"), std::string::npos) << e.what();
  }
  // Parameters that are no object schema cannot be arguments.
  const ToolRequest scalar = parse_tool_request(json::parse(R"({"tool_choice": {"type": "function", "function":
      {"name": "a"}}, "tools": [{"type": "function", "function": {"name": "a", "parameters": {"type": "string"}}}]})"));
  EXPECT_THROW(constrain_tool_choice(scalar, model::ToolCallFormat::Hermes, req), ApiError);
  // Tools not offered: nothing to refuse, with or without a format.
  EXPECT_NO_THROW(constrain_tool_choice(tool_request(R"(, "tool_choice": "none")"), std::nullopt, req));
  model::CompletionRequest hermes, mistral;
  constrain_tool_choice(tools, model::ToolCallFormat::Hermes, hermes);
  EXPECT_TRUE(hermes.skip_special_tokens);
  constrain_tool_choice(tools, model::ToolCallFormat::Mistral, mistral);
  EXPECT_FALSE(mistral.skip_special_tokens);  // [TOOL_CALLS] is a special token
}

// An OpenAI-shaped request (arguments as JSON text, the assistant's content null,
// the tool role) through the request parser into real templates. The expected
// texts are jinja2 3.1's renderings with transformers' setup of the same
// conversation (arguments as an object, content None). The tools' keys are
// written sorted, so parse_completion_request's (key-sorted) tools agree with
// the client's order that the route restores (TemplatesSeeTheClientsKeyOrder).
constexpr const char* kOpenAiToolConversation = R"({"messages": [
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
      "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "18 C"}],
  "tools": [{"function": {"description": "Current weather", "name": "get_weather", "parameters":
    {"properties": {"city": {"type": "string"}}, "required": ["city"], "type": "object"}}, "type": "function"}]})";

constexpr const char* kQwen25Rendering =
    "<|im_start|>system\nYou are helpful.\n\n# Tools\n\nYou may call one or more functions to assist with"
    " the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<too"
    "ls>\n{\"function\": {\"description\": \"Current weather\", \"name\": \"get_weather\", \"parameters\""
    ": {\"properties\": {\"city\": {\"type\": \"string\"}}, \"required\": [\"city\"], \"type\": \"object\""
    "}}, \"type\": \"function\"}\n</tools>\n\nFor each function call, return a json object with function "
    "name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>"
    ", \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n<|im_start|>user\nWeather in Paris?<|i"
    "m_end|>\n<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \""
    "Paris\"}}\n</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n18 C\n</tool_response><|im_end"
    "|>\n<|im_start|>assistant\n";
constexpr const char* kLlama33Rendering =
    "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nEnvironment: ipython\nCutting Knowled"
    "ge Date: December 2023\nToday Date: 26 Jul 2024\n\nYou are helpful.<|eot_id|><|start_header_id|>user"
    "<|end_header_id|>\n\nGiven the following functions, please respond with a JSON for a function call w"
    "ith its proper arguments that best answers the given prompt.\n\nRespond in the format {\"name\": fun"
    "ction name, \"parameters\": dictionary of argument name and its value}.Do not use variables.\n\n{\n "
    "   \"function\": {\n        \"description\": \"Current weather\",\n        \"name\": \"get_weather\""
    ",\n        \"parameters\": {\n            \"properties\": {\n                \"city\": {\n          "
    "          \"type\": \"string\"\n                }\n            },\n            \"required\": [\n    "
    "            \"city\"\n            ],\n            \"type\": \"object\"\n        }\n    },\n    \"typ"
    "e\": \"function\"\n}\n\nWeather in Paris?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
    "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}<|eot_id|><|start_header_id|>ipyth"
    "on<|end_header_id|>\n\n\"18 C\"<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n";

TEST(ToolRequest, OpenAiConversationRendersAsTransformers) {
  const ParsedRequest r = parse_completion_request(json::parse(kOpenAiToolConversation), Endpoint::ChatCompletions,
                                                   RequestDefaults{}, 1);
  const model::ModelChat qwen(model::real_templates::kQwen25, "", "<|im_end|>");
  EXPECT_EQ(qwen.render(r.messages, r.chat), kQwen25Rendering);
  const model::ModelChat llama(model::real_templates::kLlama33, "<|begin_of_text|>", "<|eot_id|>");
  EXPECT_EQ(llama.render(r.messages, r.chat), kLlama33Rendering);
}

// The template sees the keys of tools and of history arguments in the order
// the client wrote them (transformers keeps it), not sorted.
TEST(ToolRequest, TemplatesSeeTheClientsKeyOrder) {
  const std::string body = R"({"messages": [{"role": "user", "content": "Hi"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function",
        "function": {"name": "f", "arguments": "{\"zeta\": 1, \"alpha\": 2}"}}]},
      {"role": "tool", "tool_call_id": "c", "content": "ok"}],
    "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object",
      "properties": {"zeta": {"type": "integer"}, "alpha": {"type": "integer"}}}}}]})";
  ParsedRequest r = parse_completion_request(parse_json_body(body), Endpoint::ChatCompletions, RequestDefaults{}, 1);
  r.chat.tools_json = r.tools.tools_json = tools_in_client_order(r.tools, body);
  const model::ModelChat qwen(model::real_templates::kQwen25, "", "<|im_end|>");
  const std::string text = qwen.render(r.messages, r.chat);
  EXPECT_NE(text.find(R"({"type": "function", "function": {"name": "f", "parameters": {"type": "object", )"
                      R"("properties": {"zeta": {"type": "integer"}, "alpha": {"type": "integer"}}}}})"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(R"({"name": "f", "arguments": {"zeta": 1, "alpha": 2}})"), std::string::npos) << text;
  // And the grammar of a required call writes the properties in that order too.
  r.tools.choice = ToolRequest::Choice::Required;
  model::CompletionRequest req;
  const auto grammar = constrain_tool_choice(r.tools, model::ToolCallFormat::Hermes, req);
  ASSERT_NE(grammar, nullptr);
  model::GrammarMatcher m(std::make_shared<model::TokenConstraint>(
      grammar, model::GrammarVocabulary::from_pieces({"x"}, {})));
  EXPECT_TRUE(m.accept_bytes("<tool_call>\n{\"name\": \"f\", \"arguments\": {\"zeta\": 1, \"alpha\": 2}}"));
  model::GrammarMatcher sorted(std::make_shared<model::TokenConstraint>(
      grammar, model::GrammarVocabulary::from_pieces({"x"}, {})));
  EXPECT_FALSE(sorted.accept_bytes("<tool_call>\n{\"name\": \"f\", \"arguments\": {\"alpha\": 2, \"zeta\""));
}

ResponseMeta chat_meta() {
  return {Endpoint::ChatCompletions, std::string("chatcmpl-x"), 1700000000, std::string("tiny"), std::string("fp")};
}

model::CompletionResult finished(std::string text, model::FinishReason finish = model::FinishReason::EndOfGeneration) {
  model::CompletionResult r;
  r.finish = finish;
  r.text = std::move(text);
  r.generated_ids = {1, 2, 3};
  return r;
}

json message_of(const ResponseJson& response) { return json::parse(dump_json(response))["choices"][0]["message"]; }

const std::string kTwoCalls =
    "Checking.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
    "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>";

TEST(ToolCallReply, WholeResponse) {
  const model::CompletionResult result = finished(kTwoCalls);
  ResponseJson response = completion_response(chat_meta(), result, nullptr);
  ToolCallReply(model::ToolCallFormat::Hermes, true, 7).shape(response["choices"][0], result);
  const json message = message_of(response);
  EXPECT_EQ(message["content"], "Checking.");
  ASSERT_EQ(message["tool_calls"].size(), 2u);
  const json& first = message["tool_calls"][0];
  EXPECT_EQ(first["type"], "function");
  EXPECT_EQ(first["function"]["name"], "get_weather");
  EXPECT_EQ(first["function"]["arguments"], "{\"city\": \"Paris\"}");
  EXPECT_EQ(first["id"].get<std::string>().rfind("call_", 0), 0u);
  EXPECT_EQ(first["id"].get<std::string>().size(), 29u);
  EXPECT_NE(first["id"], message["tool_calls"][1]["id"]);
  EXPECT_EQ(json::parse(dump_json(response))["choices"][0]["finish_reason"], "tool_calls");

  // One call only when parallel calls are off; no content: null.
  const model::CompletionResult only_calls =
      finished("<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call><tool_call>{\"name\": \"b\"}</tool_call>");
  ResponseJson single = completion_response(chat_meta(), only_calls, nullptr);
  ToolCallReply(model::ToolCallFormat::Hermes, false, 7).shape(single["choices"][0], only_calls);
  EXPECT_TRUE(message_of(single)["content"].is_null());
  EXPECT_EQ(message_of(single)["tool_calls"].size(), 1u);

  // No call: the text, finish_reason as generation ended; a cut-off call ends with "length".
  const model::CompletionResult text = finished("Sunny.");
  ResponseJson plain = completion_response(chat_meta(), text, nullptr);
  ToolCallReply(model::ToolCallFormat::Hermes, true, 7).shape(plain["choices"][0], text);
  EXPECT_EQ(message_of(plain), json::parse(R"({"role": "assistant", "content": "Sunny.", "refusal": null})"));
  const model::CompletionResult cut = finished("<tool_call>{\"name\": \"a\", \"arguments\": {\"q", model::FinishReason::Length);
  ResponseJson cut_response = completion_response(chat_meta(), cut, nullptr);
  ToolCallReply(model::ToolCallFormat::Hermes, true, 7).shape(cut_response["choices"][0], cut);
  EXPECT_EQ(json::parse(dump_json(cut_response))["choices"][0]["finish_reason"], "length");

  std::mt19937_64 bits(1);
  const std::string mistral_id = make_tool_call_id(model::ToolCallFormat::Mistral, bits);
  EXPECT_EQ(mistral_id.size(), 9u);  // what Mistral's templates require of tool_call_id
}

// Streams `text` token by token of `piece` bytes and reassembles the message as
// the openai client does.
json streamed_message(const std::string& text, std::size_t piece, std::string& finish_reason, bool& shape_ok) {
  StreamEncoder encoder(chat_meta(), false, nullptr);
  ToolCallReply reply(model::ToolCallFormat::Hermes, true, 7);
  std::string sse = encoder.start();
  for (std::size_t pos = 0; pos < text.size(); pos += piece) {
    model::TokenEvent t;
    t.text = text.substr(pos, piece);
    sse += reply.tokens(encoder, std::span(&t, 1));
  }
  const model::CompletionResult result = finished(text);
  sse += reply.finish(encoder, result);
  sse += encoder.close(std::span(&result, 1));
  json message = {{"role", "assistant"}, {"content", ""}, {"refusal", nullptr}};
  json calls = json::array();
  shape_ok = true;
  for (const json& e : sse_testing::events(sse)) {
    if (e == "[DONE]") continue;
    const json& choice = e["choices"][0];
    if (!choice["finish_reason"].is_null()) finish_reason = choice["finish_reason"];
    const json& delta = choice["delta"];
    if (delta.contains("content")) message["content"] = message["content"].get<std::string>() + delta["content"].get<std::string>();
    if (!delta.contains("tool_calls")) continue;
    for (const json& d : delta["tool_calls"]) {
      const std::size_t index = d["index"];
      if (index == calls.size()) {
        // A call's first delta: id, type and name, as OpenAI streams it.
        shape_ok = shape_ok && d.contains("id") && d["type"] == "function" && d["function"].contains("name");
        calls.push_back({{"id", d["id"]}, {"type", "function"}, {"function", {{"name", d["function"]["name"]}, {"arguments", ""}}}});
      } else {
        shape_ok = shape_ok && !d.contains("id") && !d["function"].contains("name");
      }
      json& args = calls[index]["function"]["arguments"];
      args = args.get<std::string>() + d["function"]["arguments"].get<std::string>();
    }
  }
  if (!calls.empty()) message["tool_calls"] = calls;
  if (message["content"] == "" && !calls.empty()) message["content"] = nullptr;
  return message;
}

TEST(ToolCallReply, StreamedDeltasReassembleToTheWholeResponse) {
  for (const std::string& text : {kTwoCalls, std::string("No calls <tool here."), std::string("<tool_call>{oops")}) {
    const model::CompletionResult result = finished(text);
    ResponseJson whole = completion_response(chat_meta(), result, nullptr);
    ToolCallReply(model::ToolCallFormat::Hermes, true, 7).shape(whole["choices"][0], result);
    for (const std::size_t piece : {1u, 2u, 3u, 7u, 1000u}) {
      std::string reason;
      bool shape_ok = false;
      EXPECT_EQ(streamed_message(text, piece, reason, shape_ok), message_of(whole)) << text << " / " << piece;
      EXPECT_TRUE(shape_ok) << text << " / " << piece;
      EXPECT_EQ(reason, json::parse(dump_json(whole))["choices"][0]["finish_reason"]) << text;
    }
  }
}

}  // namespace
}  // namespace lamina::serve
