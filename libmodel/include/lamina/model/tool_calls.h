// Tool calls in a model's output: the formats the common chat templates teach
// their models (recognised from the template text), and a parser that splits
// generated text into content and calls, whole or as it streams.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lamina/model/export.h"
#include "lamina/model/grammar.h"

namespace lamina::model {

enum class ToolCallFormat {
  Hermes,      // <tool_call>{"name": ..., "arguments": {...}}</tool_call> (Qwen 2.5, Qwen 3, Hermes)
  Llama3Json,  // the reply is {"name": ..., "parameters": {...}} (Llama 3.1-3.3), calls joined by ';'
  Mistral,     // [TOOL_CALLS][{"name": ..., "arguments": {...}}] or [TOOL_CALLS]name[ARGS]{...}
  Harmony,     // gpt-oss: <|channel|>commentary to=functions.NAME ...<|message|>{...}<|call|>
};

// The format a chat template teaches, from the markers its text holds; nullopt
// when it offers no tools or uses a format we do not parse.
LAMINA_MODEL_API std::optional<ToolCallFormat> detect_tool_call_format(std::string_view chat_template);
LAMINA_MODEL_API std::string_view tool_call_format_name(ToolCallFormat format);
// True when the format's markers are special tokens (Mistral's [TOOL_CALLS],
// harmony's <|channel|>...): the output must be decoded with them kept.
LAMINA_MODEL_API bool tool_call_markers_are_special(ToolCallFormat format);

struct LAMINA_MODEL_API ToolCall {
  std::string name;
  std::string arguments;  // the JSON arguments as the model wrote them
};

struct LAMINA_MODEL_API ToolCallOutput {
  std::string content;  // the text outside the calls (harmony: the final channel)
  std::vector<ToolCall> calls;
};

// One piece of a streamed call: the call's first piece names it (`name`
// non-empty); later pieces carry further argument text only.
struct LAMINA_MODEL_API ToolCallDelta {
  std::size_t index = 0;
  std::string name;
  std::string arguments;
};

struct LAMINA_MODEL_API ToolCallStreamDelta {
  std::string content;
  std::vector<ToolCallDelta> calls;
  bool empty() const { return content.empty() && calls.empty(); }
};

// Splits output as it is generated. Text that may still become a call marker is
// held back; a call is reported once its name is known, then its arguments as
// they grow. The deltas of any split of a text reassemble to parse_tool_calls()
// of the whole text. Output that does not follow the format stays content.
// A piece costs time in proportion to its length and to the number of JSON
// values in the call being read (what earlier pieces revealed is kept).
class LAMINA_MODEL_API ToolCallStream {
 public:
  explicit ToolCallStream(ToolCallFormat format);
  ~ToolCallStream();
  ToolCallStream(ToolCallStream&&) noexcept;
  ToolCallStream& operator=(ToolCallStream&&) noexcept;

  ToolCallStreamDelta append(std::string_view piece);
  // The end of the output: releases what was held back.
  ToolCallStreamDelta finish();

 private:
  struct LAMINA_MODEL_LOCAL State;
  std::unique_ptr<State> state_;
};

LAMINA_MODEL_API ToolCallOutput parse_tool_calls(ToolCallFormat format, std::string_view text);

// A function the output may call: its name and its parameters' JSON schema
// (JSON text; empty: any JSON object), compiled strictly (OpenAI's
// `function.strict`: JsonSchemaOptions::strict) or not.
struct LAMINA_MODEL_API ToolFunction {
  std::string name;
  std::string parameters;
  bool strict = false;
};

// The grammar of an output that is nothing but calls in `format`: one call
// (with `parallel`, one or more; harmony ends its turn after one) of one of
// `functions`, its arguments valid against that function's parameters (the
// schema compiler's subset). For
// tool_choice "required" (every tool) or a named function (that one alone).
// parse_tool_calls() of any text of the grammar returns its calls. Throws
// GrammarError naming the function for an unsupported or impossible schema,
// std::invalid_argument for no functions or an empty name.
LAMINA_MODEL_API std::shared_ptr<const Grammar> tool_call_grammar(ToolCallFormat format,
                                                                  const std::vector<ToolFunction>& functions,
                                                                  bool parallel);
// The same grammar as GBNF text.
LAMINA_MODEL_API std::string tool_call_gbnf(ToolCallFormat format, const std::vector<ToolFunction>& functions,
                                            bool parallel);
// The format's markers that vocabularies keep as special tokens: the grammar's
// vocabulary must let those tokens stand for their text
// (GrammarVocabulary::from_tokenizer(tokenizer, markers)).
LAMINA_MODEL_API std::vector<std::string> tool_call_marker_tokens(ToolCallFormat format);

}  // namespace lamina::model
