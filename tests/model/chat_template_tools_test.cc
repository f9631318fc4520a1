// Tools, the tool role, a message's other fields (tool_calls), add_generation_prompt
// false and extra keyword arguments reach real chat templates as transformers passes
// them. The expected texts are jinja2 3.1's renderings with transformers' template
// setup (trim_blocks, lstrip_blocks, loop controls, its |tojson) of the same inputs.
#include <gtest/gtest.h>

#include <string>

#include "chat_template_real_templates.h"
#include "chat_template_tool_templates.h"
#include "lamina/model/chat_template.h"
#include "lamina/model/tool_calls.h"

namespace lamina::model {
namespace {

// The conversation rendered without the generation prompt; with it, the template's
// assistant header follows.
constexpr const char* kQwenText =
    "<|im_start|>system\nYou are helpful.\n\n# Tools\n\nYou may call one or more functions to assist with"
    " the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<too"
    "ls>\n{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Current w"
    "eather in a city\", \"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"s"
    "tring\", \"description\": \"City name\"}}, \"required\": [\"city\"]}}}\n</tools>\n\nFor each functio"
    "n call, return a json object with function name and arguments within <tool_call></tool_call> XML tag"
    "s:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_en"
    "d|>\n<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n<tool_call>\n{\"name\": \""
    "get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call><|im_end|>\n<|im_start|>user\n<too"
    "l_response>\n18 C and sunny\n</tool_response><|im_end|>\n";
constexpr const char* kLlama33Text =
    "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nEnvironment: ipython\nCutting Knowled"
    "ge Date: December 2023\nToday Date: 26 Jul 2024\n\nYou are helpful.<|eot_id|><|start_header_id|>user"
    "<|end_header_id|>\n\nGiven the following functions, please respond with a JSON for a function call w"
    "ith its proper arguments that best answers the given prompt.\n\nRespond in the format {\"name\": fun"
    "ction name, \"parameters\": dictionary of argument name and its value}.Do not use variables.\n\n{\n "
    "   \"type\": \"function\",\n    \"function\": {\n        \"name\": \"get_weather\",\n        \"descr"
    "iption\": \"Current weather in a city\",\n        \"parameters\": {\n            \"type\": \"object\""
    ",\n            \"properties\": {\n                \"city\": {\n                    \"type\": \"strin"
    "g\",\n                    \"description\": \"City name\"\n                }\n            },\n       "
    "     \"required\": [\n                \"city\"\n            ]\n        }\n    }\n}\n\nWeather in Par"
    "is?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n{\"name\": \"get_weather\", \"paramete"
    "rs\": {\"city\": \"Paris\"}}<|eot_id|><|start_header_id|>ipython<|end_header_id|>\n\n\"18 C and sunn"
    "y\"<|eot_id|>";

struct Expected {
  const char* template_name;
  const char* text;
  const char* generation_prompt;
};

const Expected kExpected[] = {
    {"Qwen3", kQwenText, "<|im_start|>assistant\n"},
    {"Qwen25", kQwenText, "<|im_start|>assistant\n"},
    {"Llama33", kLlama33Text, "<|start_header_id|>assistant<|end_header_id|>\n\n"},
};

const char* source_of(const std::string& name) {
  if (name == "Qwen3") return real_templates::kQwen3;
  if (name == "Qwen25") return real_templates::kQwen25;
  return real_templates::kLlama33;
}

constexpr const char* kTools = R"([{"type": "function", "function": {"name": "get_weather",
  "description": "Current weather in a city", "parameters": {"type": "object",
  "properties": {"city": {"type": "string", "description": "City name"}}, "required": ["city"]}}}])";

std::vector<ChatMessage> tool_conversation() {
  return {
      {"system", "You are helpful."},
      {"user", "Weather in Paris?"},
      {"assistant", "",
       R"({"tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]})"},
      {"tool", "18 C and sunny"},
  };
}

TEST(ChatTemplateTools, RenderAsTransformers) {
  for (const Expected& e : kExpected) {
    const bool llama = std::string(e.template_name) == "Llama33";
    const ModelChat chat(source_of(e.template_name), llama ? "<|begin_of_text|>" : "", llama ? "<|eot_id|>" : "<|im_end|>");
    for (const bool generation_prompt : {true, false}) {
      ChatRenderOptions options;
      options.add_generation_prompt = generation_prompt;
      options.tools_json = kTools;
      options.kwargs_json = R"({"custom_flag": true})";
      EXPECT_EQ(chat.render(tool_conversation(), options),
                std::string(e.text) + (generation_prompt ? e.generation_prompt : ""))
          << e.template_name << " add_generation_prompt=" << generation_prompt;
    }
  }
}

TEST(ChatTemplateTools, KeywordArgumentsReplaceFlagsAndBadJsonIsAnError) {
  const ModelChat chat(real_templates::kQwen3, "", "<|im_end|>");
  const std::vector<ChatMessage> hello = {{"user", "Hi"}};
  ChatRenderOptions off;
  off.kwargs_json = R"({"enable_thinking": false})";
  ChatRenderOptions flag;
  flag.flags = {{"enable_thinking", false}};
  EXPECT_EQ(chat.render(hello, off), chat.render(hello, flag));
  EXPECT_NE(chat.render(hello, off), chat.render(hello));
  ChatRenderOptions bad;
  bad.tools_json = "{not json";
  EXPECT_THROW(chat.render(hello, bad), ChatTemplateError);
  bad.tools_json = R"({"type": "function"})";
  EXPECT_THROW(chat.render(hello, bad), ChatTemplateError);
  const std::vector<ChatMessage> broken = {{"user", "Hi", "[1, 2]"}};
  EXPECT_THROW(chat.render(broken, ChatRenderOptions{}), ChatTemplateError);
}

// A call and its result as the server hands them to templates (a 9-character id,
// as Mistral's templates require; content null arrives as "").
std::vector<ChatMessage> weather_round_trip() {
  return {
      {"system", "You are helpful."},
      {"user", "Weather in Paris?"},
      {"assistant", "",
       R"({"tool_calls": [{"id": "a1B2c3D4e", "type": "function",
           "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]})"},
      {"tool", "18 C", R"({"tool_call_id": "a1B2c3D4e"})"},
  };
}

// Mistral Small 3.1's template: tools listed before the last user turn, the
// assistant's calls as a [TOOL_CALLS] list with 9-character ids, results as
// [TOOL_RESULTS]; jinja2 3.1's rendering with transformers' setup (the system
// message given, so strftime_now's date does not show).
TEST(ChatTemplateTools, MistralSmallRendersAsTransformers) {
  const ModelChat chat(tool_templates::kMistralSmall31, "<s>", "</s>");
  const std::vector<ChatMessage> messages = weather_round_trip();
  ChatRenderOptions options;
  options.tools_json = R"([{"function": {"description": "Current weather", "name": "get_weather", "parameters":
      {"properties": {"city": {"type": "string"}}, "required": ["city"], "type": "object"}}, "type": "function"}])";
  EXPECT_EQ(chat.render(messages, options),
      "<s>[SYSTEM_PROMPT]You are a helpful assistant that can call tools. If you call one or more tools, fo"
      "rmat them in a single JSON array or objects, where each object is a tool call, not as separate objec"
      "ts outside of an array or multiple arrays. Use the format [{\"name\": tool call name, \"arguments\":"
      " tool call arguments}, additional tool calls] if you call more than one tool. If you call tools, do "
      "not attempt to interpret them or otherwise provide a response until you receive a tool call result t"
      "hat you can interpret for the user.You are helpful.[/SYSTEM_PROMPT][AVAILABLE_TOOLS] [{\"type\": \"f"
      "unction\", \"function\": {\"description\": \"Current weather\", \"name\": \"get_weather\", \"paramet"
      "ers\": {\"properties\": {\"city\": {\"type\": \"string\"}}, \"required\": [\"city\"], \"type\": \"ob"
      "ject\"}}}][/AVAILABLE_TOOLS][INST]Weather in Paris?[/INST][TOOL_CALLS] [{\"name\": \"get_weather\", "
      "\"arguments\": {\"city\": \"Paris\"}, \"id\": \"a1B2c3D4e\"}]</s>[TOOL_RESULTS] {\"content\": 18 C, "
      "\"call_id\": \"a1B2c3D4e\"}[/TOOL_RESULTS]");
  EXPECT_EQ(detect_tool_call_format(tool_templates::kMistralSmall31), ToolCallFormat::Mistral);
}

// gpt-oss's harmony template: tools as a TypeScript namespace in the developer
// message, the call addressed to=functions.NAME on the commentary channel, the
// result from functions.NAME; jinja2 3.1's rendering with transformers' setup
// (DATE stands for strftime_now's date).
constexpr const char* kGptOssText =
    "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\nKnowledge cuto"
    "ff: 2024-06\nCurrent date: DATE\n\nReasoning: medium\n\n# Valid channels: analysis, commentary, fina"
    "l. Channel must be included for every message.\nCalls to these tools must go to the commentary chann"
    "el: 'functions'.<|end|><|start|>developer<|message|># Instructions\n\nYou are helpful.\n\n# Tools\n\n"
    "## functions\n\nnamespace functions {\n\n// Current weather\ntype get_weather = (_: {\n// City name\n"
    "city: string,\ndays?: number,\nunits?: \"c\" | \"f\",\n}) => any;\n\n} // namespace functions<|end|>"
    "<|start|>user<|message|>Weather in Paris?<|end|><|start|>assistant to=functions.get_weather<|channel"
    "|>commentary json<|message|>{\"city\": \"Paris\"}<|call|><|start|>functions.get_weather to=assistant"
    "<|channel|>commentary<|message|>\"18 C\"<|end|><|start|>assistant";

TEST(ChatTemplateTools, GptOssRendersAsTransformers) {
  const ModelChat chat(tool_templates::kGptOss, "<|startoftext|>", "<|return|>");
  const std::vector<ChatMessage> messages = weather_round_trip();
  ChatRenderOptions options;
  options.tools_json = R"([{"function": {"description": "Current weather", "name": "get_weather", "parameters":
      {"properties": {"city": {"description": "City name", "type": "string"}, "days": {"type": "integer"},
       "units": {"enum": ["c", "f"], "type": "string"}}, "required": ["city"], "type": "object"}},
      "type": "function"}])";
  const std::string date = ChatTemplate("{{ strftime_now('%Y-%m-%d') }}").render(ChatTemplateInputs{});
  std::string expected = kGptOssText;
  expected.replace(expected.find("DATE"), 4, date);
  EXPECT_EQ(chat.render(messages, options), expected);
  EXPECT_EQ(detect_tool_call_format(tool_templates::kGptOss), ToolCallFormat::Harmony);
}

}  // namespace
}  // namespace lamina::model
