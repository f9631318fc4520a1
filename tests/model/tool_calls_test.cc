// Tool calls parsed out of model output, for every format: whole outputs
// against hand-written expectations, then every output split at random into
// streamed pieces, whose deltas must reassemble to the same content and calls.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "chat_template_real_templates.h"
#include "lamina/model/tool_calls.h"

namespace lamina::model {
namespace {

struct Case {
  const char* what;
  ToolCallFormat format;
  std::string text;
  std::string content;
  std::vector<ToolCall> calls;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      // Hermes / Qwen.
      {"hermes one call", ToolCallFormat::Hermes,
       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>", "",
       {{"get_weather", "{\"city\": \"Paris\"}"}}},
      {"hermes text then two calls", ToolCallFormat::Hermes,
       "Let me check.\n\n<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": [1, {\"y\": \"}\"}]}}\n</tool_call>\n"
       "<tool_call>\n{\"arguments\": {}, \"name\": \"b\"}\n</tool_call>",
       "Let me check.", {{"a", "{\"x\": [1, {\"y\": \"}\"}]}"}, {"b", "{}"}}},
      {"hermes call without arguments", ToolCallFormat::Hermes, "<tool_call>{\"name\": \"now\"}</tool_call>", "",
       {{"now", "{}"}}},
      {"hermes unterminated block", ToolCallFormat::Hermes,
       "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"q\": \"\\\"x\\\" é\"}}", "", {{"f", "{\"q\": \"\\\"x\\\" é\"}"}}},
      {"hermes plain text", ToolCallFormat::Hermes, "Just text, <tool and all.\n", "Just text, <tool and all.\n", {}},
      {"hermes malformed block is text", ToolCallFormat::Hermes, "Hi <tool_call> not json </tool_call>",
       "Hi <tool_call> not json </tool_call>", {}},
      {"hermes object that is no call is text", ToolCallFormat::Hermes,
       "<tool_call>{\"city\": \"Paris\"}</tool_call>", "<tool_call>{\"city\": \"Paris\"}</tool_call>", {}},
      {"hermes arguments cut off", ToolCallFormat::Hermes, "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1, ",
       "", {{"f", "{\"a\": 1,"}}},
      {"hermes broken arguments", ToolCallFormat::Hermes,
       "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": [1}]}}</tool_call>", "}]}}</tool_call>",
       {{"f", "{\"a\": [1"}}},
      {"hermes text after a call", ToolCallFormat::Hermes,
       "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>\n\nDone.", "Done.", {{"f", "{}"}}},
      // Llama 3.x JSON.
      {"llama one call", ToolCallFormat::Llama3Json,
       "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}", "",
       {{"get_weather", "{\"city\": \"Paris\"}"}}},
      {"llama python tag and two calls", ToolCallFormat::Llama3Json,
       "<|python_tag|>{\"name\": \"a\", \"parameters\": {\"n\": 1}}; {\"name\": \"b\", \"arguments\": {\"s\": \"x;y\"}}",
       "", {{"a", "{\"n\": 1}"}, {"b", "{\"s\": \"x;y\"}"}}},
      {"llama plain text", ToolCallFormat::Llama3Json, "The weather is {fine}.", "The weather is {fine}.", {}},
      {"llama json that is no call", ToolCallFormat::Llama3Json, " {\"name\": \"Bob\", \"age\": 3}",
       " {\"name\": \"Bob\", \"age\": 3}", {}},
      {"llama text after the call", ToolCallFormat::Llama3Json,
       "{\"name\": \"f\", \"parameters\": {}}\nThat is all.", "That is all.", {{"f", "{}"}}},
      // Mistral.
      {"mistral list", ToolCallFormat::Mistral,
       "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {\"x\": 1}, \"id\": \"abcdefghi\"}, {\"name\": \"b\", "
       "\"arguments\": {}}]",
       "", {{"a", "{\"x\": 1}"}, {"b", "{}"}}},
      {"mistral named calls", ToolCallFormat::Mistral,
       "Sure.[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}[TOOL_CALLS]get_time[ARGS]{}", "Sure.",
       {{"get_weather", "{\"city\": \"Paris\"}"}, {"get_time", "{}"}}},
      {"mistral malformed", ToolCallFormat::Mistral, "[TOOL_CALLS] oops", "[TOOL_CALLS] oops", {}},
      {"mistral plain text", ToolCallFormat::Mistral, "[TOOL_CALL] is not it", "[TOOL_CALL] is not it", {}},
      // gpt-oss harmony.
      {"harmony call", ToolCallFormat::Harmony,
       "<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant<|channel|>commentary "
       "to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}",
       "", {{"get_weather", "{\"city\":\"Paris\"}"}}},
      {"harmony recipient first, two calls", ToolCallFormat::Harmony,
       "<|start|>assistant to=functions.a<|channel|>commentary json<|message|> {\"x\": 1} <|call|>"
       "<|start|>assistant<|channel|>commentary to=functions.b<|message|><|call|>",
       "", {{"a", "{\"x\": 1}"}, {"b", "{}"}}},
      {"harmony final answer", ToolCallFormat::Harmony,
       "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>final<|message|>It is 18 C.<|return|>",
       "It is 18 C.", {}},
      {"harmony recipient right after the prompt", ToolCallFormat::Harmony,
       " to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": \"Paris\"}", "",
       {{"get_weather", "{\"city\": \"Paris\"}"}}},
      {"harmony without headers", ToolCallFormat::Harmony, "Plain words.", "Plain words.", {}},
      {"harmony text starting like a recipient", ToolCallFormat::Harmony, "to be or not", "to be or not", {}},
      {"harmony header never ends", ToolCallFormat::Harmony, "<|channel|>final", "<|channel|>final", {}},
  };
  return all;
}

void expect_output(const ToolCallOutput& got, const Case& c, const std::string& how) {
  EXPECT_EQ(got.content, c.content) << c.what << how;
  ASSERT_EQ(got.calls.size(), c.calls.size()) << c.what << how;
  for (std::size_t i = 0; i < c.calls.size(); ++i) {
    EXPECT_EQ(got.calls[i].name, c.calls[i].name) << c.what << how << " call " << i;
    EXPECT_EQ(got.calls[i].arguments, c.calls[i].arguments) << c.what << how << " call " << i;
  }
}

TEST(ToolCalls, WholeOutputs) {
  for (const Case& c : cases()) expect_output(parse_tool_calls(c.format, c.text), c, "");
}

// Reassembles deltas as an OpenAI client does; a call's first delta must name it
// and come in index order, later ones must not.
struct Reassembled {
  ToolCallOutput out;
  void add(const ToolCallStreamDelta& d, const std::string& where) {
    out.content += d.content;
    for (const ToolCallDelta& c : d.calls) {
      if (!c.name.empty()) {
        ASSERT_EQ(c.index, out.calls.size()) << where;
        out.calls.push_back({c.name, {}});
      }
      ASSERT_LT(c.index, out.calls.size()) << where;
      out.calls[c.index].arguments += c.arguments;
    }
  }
};

TEST(ToolCalls, StreamedInRandomPiecesReassemble) {
  std::mt19937 rng(20261127);
  for (const Case& c : cases()) {
    for (int trial = 0; trial < 60; ++trial) {
      ToolCallStream stream(c.format);
      Reassembled r;
      const std::size_t max_piece = 1 + trial % 7;
      std::string split;
      for (std::size_t pos = 0; pos < c.text.size();) {
        const std::size_t n = std::min<std::size_t>(1 + rng() % max_piece, c.text.size() - pos);
        split += '|';
        split.append(c.text, pos, n);
        r.add(stream.append(std::string_view(c.text).substr(pos, n)), split);
        pos += n;
      }
      r.add(stream.finish(), split);
      expect_output(r.out, c, " split " + split);
    }
  }
}

// Any text, however broken: the stream agrees with the whole parse for every
// split, and nothing of the text is invented (content and arguments are pieces of it).
TEST(ToolCalls, MutatedOutputsStillReassemble) {
  std::mt19937 rng(7);
  const std::vector<std::string> bits = {"<tool_call>", "</tool_call>", "[TOOL_CALLS]", "[ARGS]", "{", "}", "[", "]",
                                         "\"", "\\", ",", ":", ";", " ", "\n", "<|message|>", "<|call|>", "<|end|>",
                                         "<|channel|>", " to=functions.f", "\"name\"", "\"arguments\"", "é", "\xff"};
  for (const Case& c : cases()) {
    for (int trial = 0; trial < 40; ++trial) {
      std::string text = c.text;
      for (int edit = 0; edit < 1 + trial % 4; ++edit) {
        const std::size_t at = text.empty() ? 0 : rng() % (text.size() + 1);
        if (rng() % 3 == 0 && at < text.size()) text.erase(at, 1 + rng() % 3);
        else text.insert(at, bits[rng() % bits.size()]);
      }
      const ToolCallOutput whole = parse_tool_calls(c.format, text);
      ToolCallStream stream(c.format);
      Reassembled r;
      for (std::size_t pos = 0; pos < text.size();) {
        const std::size_t n = std::min<std::size_t>(1 + rng() % 5, text.size() - pos);
        r.add(stream.append(std::string_view(text).substr(pos, n)), text);
        pos += n;
      }
      r.add(stream.finish(), text);
      ASSERT_EQ(r.out.content, whole.content) << text;
      ASSERT_EQ(r.out.calls.size(), whole.calls.size()) << text;
      for (std::size_t i = 0; i < whole.calls.size(); ++i) {
        EXPECT_EQ(r.out.calls[i].name, whole.calls[i].name) << text;
        EXPECT_EQ(r.out.calls[i].arguments, whole.calls[i].arguments) << text;
        EXPECT_TRUE(whole.calls[i].arguments == "{}" || text.find(whole.calls[i].arguments) != std::string::npos) << text;
      }
      EXPECT_LE(whole.content.size(), text.size()) << text;
    }
  }
}

TEST(ToolCalls, MarkersAreHeldBackUntilDecided) {
  ToolCallStream stream(ToolCallFormat::Hermes);
  EXPECT_EQ(stream.append("Hello <tool").content, "Hello");
  const ToolCallStreamDelta d = stream.append("_call>\n{\"name\": \"f\", \"arguments\": {\"a\"");
  EXPECT_EQ(d.content, "");
  ASSERT_EQ(d.calls.size(), 1u);
  EXPECT_EQ(d.calls[0].name, "f");
  EXPECT_EQ(d.calls[0].arguments, "{\"a\"");
  // The arguments grow as they come.
  const ToolCallStreamDelta more = stream.append(": 2}}\n</tool_call>");
  ASSERT_EQ(more.calls.size(), 1u);
  EXPECT_EQ(more.calls[0].name, "");
  EXPECT_EQ(more.calls[0].arguments, ": 2}");
  EXPECT_TRUE(stream.finish().empty());

  ToolCallStream text(ToolCallFormat::Hermes);
  EXPECT_EQ(text.append("a <tool").content, "a");
  EXPECT_EQ(text.append("box> b").content, " <toolbox> b");
}

TEST(ToolCalls, FormatsDetectedFromTemplates) {
  EXPECT_EQ(detect_tool_call_format(real_templates::kQwen3), ToolCallFormat::Hermes);
  EXPECT_EQ(detect_tool_call_format(real_templates::kQwen25), ToolCallFormat::Hermes);
  EXPECT_EQ(detect_tool_call_format(real_templates::kLlama33), ToolCallFormat::Llama3Json);
  EXPECT_EQ(detect_tool_call_format(real_templates::kGemma2), std::nullopt);
  EXPECT_EQ(detect_tool_call_format(real_templates::kMistralV02), std::nullopt);
  EXPECT_EQ(detect_tool_call_format(real_templates::kLlama2), std::nullopt);
  EXPECT_EQ(detect_tool_call_format("{% for tool_call in message.tool_calls %}[TOOL_CALLS]{% endfor %}"),
            ToolCallFormat::Mistral);
  EXPECT_EQ(detect_tool_call_format("<|start|>assistant<|channel|>commentary to=functions.x<|message|>{}<|call|>"),
            ToolCallFormat::Harmony);
}

}  // namespace
}  // namespace lamina::model
