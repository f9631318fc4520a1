// Parsing and validation of completion requests.
#include <gtest/gtest.h>

#include <string>

#include "api_error.h"
#include "json_body.h"
#include "openai_request.h"
#include "structured_output.h"

namespace lamina::serve {
namespace {

using json = nlohmann::json;

constexpr uint64_t kRandomSeed = 0x5eed;

ParsedRequest parse_chat(const std::string& body, const RequestDefaults& d = {}) {
  return parse_completion_request(parse_json_body(body), Endpoint::ChatCompletions, d, kRandomSeed);
}

ParsedRequest parse_text(const std::string& body, const RequestDefaults& d = {}) {
  return parse_completion_request(parse_json_body(body), Endpoint::Completions, d, kRandomSeed);
}

// The error `parse` refuses a body with (fails the test when it is accepted).
template <class Parse>
ApiError refusal(Parse parse, const std::string& body) {
  try {
    parse(body);
  } catch (const ApiError& e) {
    return e;
  }
  ADD_FAILURE() << "accepted: " << body;
  return ApiError(0, "accepted");
}

ApiError chat_error(const std::string& body) { return refusal([](const std::string& b) { parse_chat(b); }, body); }
ApiError text_error(const std::string& body) { return refusal([](const std::string& b) { parse_text(b); }, body); }

const std::string kUser = R"("messages": [{"role": "user", "content": "Hi"}])";

TEST(OpenAiRequest, ChatDefaultsFollowOpenAi) {
  const ParsedRequest r = parse_chat("{" + kUser + "}");
  ASSERT_EQ(r.messages.size(), 1u);
  EXPECT_EQ(r.messages[0].role, "user");
  EXPECT_EQ(r.messages[0].content, "Hi");
  EXPECT_FLOAT_EQ(r.completion.sampling.temperature, 1.0f);
  EXPECT_FLOAT_EQ(r.completion.sampling.top_p, 1.0f);
  EXPECT_EQ(r.completion.sampling.top_k, 0);
  EXPECT_FLOAT_EQ(r.completion.sampling.min_p, 0.0f);
  EXPECT_EQ(r.completion.max_tokens, -1);
  EXPECT_EQ(r.completion.top_logprobs, -1);
  EXPECT_TRUE(r.completion.stop.empty());
  EXPECT_TRUE(r.completion.stop_at_eog);
  EXPECT_FALSE(r.seed_given);
  EXPECT_EQ(r.completion.sampling.seed, kRandomSeed);
  EXPECT_FALSE(r.stream);
  EXPECT_FALSE(r.logprobs);
  EXPECT_TRUE(r.model.empty());
}

TEST(OpenAiRequest, CompletionsDefaultToSixteenTokens) {
  const ParsedRequest r = parse_text(R"({"prompt": "Once upon"})");
  EXPECT_EQ(r.prompt.text, "Once upon");
  EXPECT_FALSE(r.prompt.is_ids);
  EXPECT_EQ(r.completion.max_tokens, 16);
}

TEST(OpenAiRequest, SamplingFieldsAreRead) {
  const ParsedRequest r = parse_chat("{" + kUser + R"(, "model": "m", "temperature": 0, "top_p": 0.5, "top_k": 7,
      "min_p": 0.1, "presence_penalty": -1.5, "frequency_penalty": 2, "repeat_penalty": 1.1, "repeat_last_n": -1,
      "seed": 42, "max_tokens": 9, "stop": "END", "user": "u1", "ignore_eos": true})");
  const auto& s = r.completion.sampling;
  EXPECT_EQ(r.model, "m");
  EXPECT_FLOAT_EQ(s.temperature, 0.0f);
  EXPECT_FLOAT_EQ(s.top_p, 0.5f);
  EXPECT_EQ(s.top_k, 7);
  EXPECT_FLOAT_EQ(s.min_p, 0.1f);
  EXPECT_FLOAT_EQ(s.presence_penalty, -1.5f);
  EXPECT_FLOAT_EQ(s.frequency_penalty, 2.0f);
  EXPECT_FLOAT_EQ(s.repeat_penalty, 1.1f);
  EXPECT_EQ(s.repeat_last_n, -1);
  EXPECT_TRUE(r.seed_given);
  EXPECT_EQ(s.seed, 42u);
  EXPECT_EQ(r.completion.max_tokens, 9);
  EXPECT_EQ(r.completion.stop, std::vector<std::string>{"END"});
  EXPECT_EQ(r.user, "u1");
  EXPECT_FALSE(r.completion.stop_at_eog);
}

TEST(OpenAiRequest, NullMeansAbsent) {
  const ParsedRequest r = parse_chat("{" + kUser + R"(, "temperature": null, "stop": null, "seed": null, "n": null})");
  EXPECT_FLOAT_EQ(r.completion.sampling.temperature, 1.0f);
  EXPECT_TRUE(r.completion.stop.empty());
  EXPECT_FALSE(r.seed_given);
}

TEST(OpenAiRequest, NegativeSeedWrapsAndLargeUnsignedSeedIsKept) {
  EXPECT_EQ(parse_chat("{" + kUser + R"(, "seed": -1})").completion.sampling.seed, ~uint64_t{0});
  EXPECT_EQ(parse_chat("{" + kUser + R"(, "seed": 18446744073709551615})").completion.sampling.seed, ~uint64_t{0});
}

TEST(OpenAiRequest, MaxCompletionTokensWinsOverMaxTokens) {
  EXPECT_EQ(parse_chat("{" + kUser + R"(, "max_tokens": 5, "max_completion_tokens": 7})").completion.max_tokens, 7);
}

TEST(OpenAiRequest, ServerCapLimitsAndBecomesTheChatDefault) {
  RequestDefaults d;
  d.max_tokens_cap = 100;
  EXPECT_EQ(parse_chat("{" + kUser + "}", d).completion.max_tokens, 100);
  EXPECT_EQ(parse_chat("{" + kUser + R"(, "max_tokens": 100})", d).completion.max_tokens, 100);
  try {
    parse_chat("{" + kUser + R"(, "max_tokens": 101})", d);
    FAIL() << "accepted max_tokens above the cap";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_EQ(e.param(), "max_tokens");
  }
}

TEST(OpenAiRequest, StopListAndItsLimits) {
  EXPECT_EQ(parse_chat("{" + kUser + R"(, "stop": ["a", "bc"]})").completion.stop,
            (std::vector<std::string>{"a", "bc"}));
  std::string many = "[";
  for (int i = 0; i < 17; ++i) many += std::string(i ? "," : "") + "\"s" + std::to_string(i) + "\"";
  many += "]";
  EXPECT_EQ(chat_error("{" + kUser + R"(, "stop": )" + many + "}").param(), "stop");
  EXPECT_EQ(chat_error("{" + kUser + R"(, "stop": [""]})").param(), "stop");
  EXPECT_EQ(chat_error("{" + kUser + R"(, "stop": [1]})").code(), "invalid_type");
}

TEST(OpenAiRequest, ContentPartsDeveloperRoleAndEmptyAssistant) {
  const ParsedRequest r = parse_chat(R"({"messages": [
      {"role": "developer", "content": "Be brief."},
      {"role": "user", "content": [{"type": "text", "text": "Hello, "}, {"type": "text", "text": "world"}]},
      {"role": "assistant", "content": null},
      {"role": "user", "content": "again", "name": "bob"}]})");
  ASSERT_EQ(r.messages.size(), 4u);
  EXPECT_EQ(r.messages[0].role, "system");
  EXPECT_EQ(r.messages[1].content, "Hello, world");
  EXPECT_EQ(r.messages[2].role, "assistant");
  EXPECT_EQ(r.messages[2].content, "");
}

TEST(OpenAiRequest, MessagesThatCannotBeServed) {
  EXPECT_EQ(chat_error("{}").code(), "missing_required_parameter");
  EXPECT_EQ(chat_error(R"({"messages": []})").param(), "messages");
  EXPECT_EQ(chat_error(R"({"messages": "hi"})").code(), "invalid_type");
  EXPECT_EQ(chat_error(R"({"messages": [{"role": "robot", "content": "x"}]})").param(), "messages[0].role");
  EXPECT_EQ(chat_error(R"({"messages": [{"content": "x"}]})").param(), "messages[0].role");
  EXPECT_EQ(chat_error(R"({"messages": [{"role": "user"}]})").param(), "messages[0].content");
  EXPECT_EQ(chat_error(R"({"messages": [{"role": "user", "content": 5}]})").code(), "invalid_type");
  EXPECT_EQ(chat_error(R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]})")
                .param(),
            "messages[0].content[0].type");
  EXPECT_EQ(chat_error(R"({"messages": [{"role": "user", "content": [{"type": "text"}]}]})").param(),
            "messages[0].content[0].text");
}

TEST(OpenAiRequest, WrongTypesNameTheParameter) {
  for (const char* field : {R"("temperature": "0.5")", R"("top_k": 1.5)", R"("max_tokens": "10")",
                            R"("stream": "yes")", R"("seed": 1.5)", R"("logprobs": 1)", R"("model": 3)"}) {
    const ApiError e = chat_error("{" + kUser + ", " + field + "}");
    EXPECT_EQ(e.status(), 400) << field;
    EXPECT_EQ(e.code(), "invalid_type") << field;
    EXPECT_FALSE(e.param().empty()) << field;
  }
}

TEST(OpenAiRequest, OutOfRangeValuesAreRefused) {
  for (const char* field : {R"("temperature": 2.5)", R"("temperature": -0.1)", R"("top_p": 1.5)", R"("min_p": -1)",
                            R"("presence_penalty": 3)", R"("max_tokens": 0)", R"("max_tokens": -5)",
                            R"("max_tokens": 99999999999999999999)", R"("max_tokens": 4294967296)",
                            R"("top_k": -1)", R"("top_logprobs": 21, "logprobs": true)"}) {
    const ApiError e = chat_error("{" + kUser + ", " + field + "}");
    EXPECT_EQ(e.status(), 400) << field;
    EXPECT_FALSE(e.param().empty()) << field;
  }
  // A float too large for an integer field is the wrong type, not a crash.
  EXPECT_EQ(chat_error("{" + kUser + R"(, "max_tokens": 1e300})").code(), "invalid_type");
}

TEST(OpenAiRequest, ChoicesAndLogitBias) {
  EXPECT_EQ(parse_chat("{" + kUser + "}").n, 1u);
  EXPECT_EQ(parse_chat("{" + kUser + R"(, "n": 16})").n, 16u);
  EXPECT_EQ(chat_error("{" + kUser + R"(, "n": 17})").param(), "n");
  EXPECT_EQ(chat_error("{" + kUser + R"(, "n": 0})").param(), "n");
  const ParsedRequest r = parse_chat("{" + kUser + R"(, "logit_bias": {"15": 100, "7": -2.5}})");
  ASSERT_EQ(r.completion.sampling.logit_bias.size(), 2u);
  float bias15 = 0, bias7 = 0;
  for (const model::TokenBias& b : r.completion.sampling.logit_bias) (b.id == 15 ? bias15 : bias7) = b.bias;
  EXPECT_EQ(bias15, 100.0f);
  EXPECT_EQ(bias7, -2.5f);
  EXPECT_TRUE(parse_text(R"({"prompt": "x", "logit_bias": {"0": -100}})").completion.sampling.logit_bias.size() == 1);
  for (const std::string bad : {R"([1])", R"({"x": 1})", R"({"-1": 1})", R"({"1.5": 1})", R"({"99999999999": 1})",
                                R"({"1": 100.5})", R"({"1": -101})", R"({"1": "5"})"}) {
    const ApiError e = chat_error("{" + kUser + R"(, "logit_bias": )" + bad + "}");
    EXPECT_EQ(e.status(), 400) << bad;
    EXPECT_EQ(e.param().rfind("logit_bias", 0), 0u) << bad << ": " << e.param();
  }
}

TEST(OpenAiRequest, UnsupportedFeaturesAreRefusedOnlyWhenUsed) {
  EXPECT_NO_THROW(parse_chat("{" + kUser + R"(, "n": 1, "logit_bias": {}, "tools": [], "response_format": {"type": "text"}})"));
  EXPECT_EQ(chat_error("{" + kUser + R"(, "tools": {"type": "function"}})").param(), "tools");
  EXPECT_EQ(chat_error("{" + kUser + R"(, "tools": ["search"]})").param(), "tools[0]");
  EXPECT_EQ(chat_error("{" + kUser + R"(, "functions": [{"name": "f"}]})").param(), "functions");
  EXPECT_EQ(text_error(R"({"prompt": "x", "echo": true})").param(), "echo");
  EXPECT_EQ(text_error(R"({"prompt": "x", "best_of": 3})").param(), "best_of");
  EXPECT_EQ(text_error(R"({"prompt": "x", "suffix": "y"})").param(), "suffix");
}

// Tools, the tool role, a message's other fields, add_generation_prompt and
// chat_template_kwargs reach the chat template as transformers passes them.
TEST(OpenAiRequest, ToolsAndTemplateArguments) {
  const ParsedRequest r = parse_chat(R"({"messages": [
      {"role": "user", "content": "Weather in Paris?"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
        "function": {"name": "weather", "arguments": "{\"city\": \"Paris\"}"}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "18 C"}],
    "tools": [{"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}}}],
    "add_generation_prompt": false, "skip_special_tokens": false,
    "chat_template_kwargs": {"enable_thinking": false, "custom": 3}})");
  ASSERT_EQ(r.messages.size(), 3u);
  EXPECT_EQ(r.messages[0].extra_json, "");
  EXPECT_EQ(nlohmann::json::parse(r.messages[1].extra_json),
            nlohmann::json::parse(R"({"tool_calls": [{"id": "c1", "type": "function",
              "function": {"name": "weather", "arguments": {"city": "Paris"}}}]})"));
  EXPECT_EQ(r.messages[2].role, "tool");
  EXPECT_EQ(r.messages[2].content, "18 C");
  EXPECT_EQ(nlohmann::json::parse(r.messages[2].extra_json), nlohmann::json::parse(R"({"tool_call_id": "c1"})"));
  EXPECT_EQ(nlohmann::json::parse(r.chat.tools_json)[0]["function"]["name"], "weather");
  EXPECT_FALSE(r.chat.add_generation_prompt);
  EXPECT_EQ(nlohmann::json::parse(r.chat.kwargs_json), nlohmann::json::parse(R"({"enable_thinking": false, "custom": 3})"));
  ASSERT_EQ(r.chat.flags.size(), 1u);
  EXPECT_EQ(r.chat.flags[0], (std::pair<std::string, bool>("enable_thinking", false)));
  EXPECT_FALSE(r.completion.skip_special_tokens);

  const ParsedRequest plain = parse_chat("{" + kUser + "}");
  EXPECT_TRUE(plain.chat.add_generation_prompt);
  EXPECT_TRUE(plain.chat.tools_json.empty());
  EXPECT_TRUE(plain.chat.kwargs_json.empty());
  EXPECT_TRUE(plain.completion.skip_special_tokens);
}

TEST(OpenAiRequest, StreamOptions) {
  const ParsedRequest r = parse_chat("{" + kUser + R"(, "stream": true, "stream_options": {"include_usage": true}})");
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_FALSE(parse_chat("{" + kUser + R"(, "stream": true})").include_usage);
  EXPECT_EQ(chat_error("{" + kUser + R"(, "stream_options": {"include_usage": true}})").param(), "stream_options");
}

TEST(OpenAiRequest, LogprobsOfChatAndCompletions) {
  EXPECT_EQ(parse_chat("{" + kUser + R"(, "logprobs": true})").completion.top_logprobs, 0);
  const ParsedRequest chat = parse_chat("{" + kUser + R"(, "logprobs": true, "top_logprobs": 3})");
  EXPECT_TRUE(chat.logprobs);
  EXPECT_EQ(chat.completion.top_logprobs, 3);
  EXPECT_EQ(parse_chat("{" + kUser + R"(, "logprobs": false})").completion.top_logprobs, -1);
  EXPECT_EQ(chat_error("{" + kUser + R"(, "top_logprobs": 2})").param(), "top_logprobs");
  const ParsedRequest text = parse_text(R"({"prompt": "x", "logprobs": 2})");
  EXPECT_TRUE(text.logprobs);
  EXPECT_EQ(text.completion.top_logprobs, 2);
  EXPECT_EQ(parse_text(R"({"prompt": "x", "logprobs": 0})").completion.top_logprobs, 0);
  EXPECT_EQ(text_error(R"({"prompt": "x", "logprobs": true})").code(), "invalid_type");
}

TEST(OpenAiRequest, PromptForms) {
  const ParsedRequest ids = parse_text(R"({"prompt": [1, 2, 3]})");
  EXPECT_TRUE(ids.prompt.is_ids);
  EXPECT_EQ(ids.prompt.ids, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(parse_text(R"({"prompt": ["one"]})").prompt.text, "one");
  EXPECT_EQ(parse_text(R"({"prompt": [[4, 5]]})").prompt.ids, (std::vector<int32_t>{4, 5}));
  EXPECT_EQ(text_error("{}").code(), "missing_required_parameter");
  EXPECT_EQ(text_error(R"({"prompt": []})").param(), "prompt");
  EXPECT_EQ(text_error(R"({"prompt": ["a", "b"]})").param(), "prompt");
  EXPECT_EQ(text_error(R"({"prompt": [1, -2]})").param(), "prompt");
  EXPECT_EQ(text_error(R"({"prompt": [1, 99999999999]})").param(), "prompt");
  EXPECT_EQ(text_error(R"({"prompt": [1, 2.5]})").code(), "invalid_type");
  EXPECT_EQ(text_error(R"({"prompt": 7})").code(), "invalid_type");
}

TEST(OpenAiRequest, BodiesThatAreNotJsonObjects) {
  for (const std::string& body : {std::string("{"), std::string("{\"a\": }"), std::string("[1, 2]"),
                                 std::string("\"text\""), std::string(""), std::string("{\"a\": 1e999}"),
                                 std::string("{\"a\": \"\xff\xfe\"}"), std::string("{\"a\": \"\xc3\"}"),
                                 std::string("{\"a\": 1} trailing")}) {
    try {
      parse_json_body(body);
      ADD_FAILURE() << "accepted: " << body;
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status(), 400) << body;
    }
  }
  EXPECT_NO_THROW(parse_json_body("{\"a\": \"caf\xc3\xa9 \\u00e9\"}"));
}

TEST(OpenAiRequest, DeepNestingIsRefusedCheaply) {
  const std::size_t depth = 1'000'000;
  const std::string body = "{\"a\":" + std::string(depth, '[') + std::string(depth, ']') + "}";
  try {
    parse_json_body(body);
    FAIL() << "accepted a deeply nested body";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
  }
  EXPECT_NO_THROW(parse_json_body("{\"a\":" + std::string(40, '[') + std::string(40, ']') + "}"));
}

}  // namespace
}  // namespace lamina::serve

namespace lamina::serve {
namespace {

std::shared_ptr<const model::Grammar> grammar_of(const std::string& body) {
  return parse_output_grammar(parse_json_body(body), body);
}

ApiError grammar_error(const std::string& body) {
  return refusal([](const std::string& b) { grammar_of(b); }, body);
}

TEST(OpenAiRequest, StructuredOutputsCompileTheirGrammar) {
  EXPECT_EQ(grammar_of("{" + kUser + R"(, "response_format": {"type": "text"}})"), nullptr);
  EXPECT_EQ(grammar_of("{" + kUser + "}"), nullptr);
  EXPECT_NE(grammar_of("{" + kUser + R"(, "response_format": {"type": "json_object"}})"), nullptr);
  EXPECT_NE(grammar_of("{" + kUser + R"(, "response_format": {"type": "json_schema", "json_schema": {"name": "p",
      "strict": true, "schema": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"],
      "additionalProperties": false}}}})"), nullptr);
  EXPECT_NE(grammar_of(R"({"prompt": "x", "json_schema": {"type": "array", "items": {"enum": [1, 2]}}})"), nullptr);
  EXPECT_NE(grammar_of(R"({"prompt": "x", "grammar": "root ::= \"yes\" | \"no\""})"), nullptr);
  EXPECT_EQ(grammar_of(R"({"prompt": "x", "grammar": ""})"), nullptr);
}

TEST(OpenAiRequest, BadSchemasAndGrammarsAreRefusedWithTheirField) {
  const ApiError impossible = grammar_error("{" + kUser + R"(, "response_format": {"type": "json_schema",
      "json_schema": {"name": "p", "schema": {"type": "array", "minItems": 2, "maxItems": 1}}}})");
  EXPECT_EQ(impossible.status(), 400);
  EXPECT_EQ(impossible.param(), "response_format.json_schema.schema");
  EXPECT_NE(std::string(impossible.what()).find("maxItems is below minItems"), std::string::npos) << impossible.what();
  EXPECT_EQ(grammar_error("{" + kUser + R"(, "response_format": {"type": "json_schema", "json_schema": {"name": "p",
      "strict": true, "schema": {"type": "object", "properties": {"a": {}}}}}})").param(),
            "response_format.json_schema.schema");
  EXPECT_EQ(grammar_error("{" + kUser + R"(, "response_format": {"type": "yaml"}})").param(), "response_format.type");
  EXPECT_EQ(grammar_error("{" + kUser + R"(, "response_format": {"type": "json_schema"}})").param(),
            "response_format.json_schema");
  EXPECT_EQ(grammar_error(R"({"prompt": "x", "json_schema": {"type": "string", "format": "ipv6"}})").param(),
            "json_schema");
  const ApiError gbnf = grammar_error(R"({"prompt": "x", "grammar": "root ::= item\n"})");
  EXPECT_EQ(gbnf.param(), "grammar");
  EXPECT_NE(std::string(gbnf.what()).find("line 1, column 10"), std::string::npos) << gbnf.what();
  EXPECT_EQ(grammar_error(R"({"prompt": "x", "grammar": "root ::= \"a\"", "json_schema": {}})").param(), "grammar");
  EXPECT_EQ(grammar_error(R"({"prompt": "x", "grammar": 5})").code(), "invalid_type");
}

}  // namespace
}  // namespace lamina::serve
