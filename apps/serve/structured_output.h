// Structured outputs: the grammar a request asks for through OpenAI's
// response_format (json_object, json_schema) or llama.cpp's json_schema and
// grammar (GBNF) fields, compiled; and its binding to the model's vocabulary.
#pragma once

#include <memory>
#include <mutex>
#include <string_view>

#include <nlohmann/json.hpp>

#include "lamina/model/grammar.h"
#include "lamina/model/tokenizer.h"
#include "lamina/model/tool_calls.h"

namespace lamina::serve {

// Null when the request asks for free text. `parsed` is `raw_body` as
// parse_json_body read it; a schema is read again from the text, in the order
// it lists the properties (parsed objects are sorted by key). Throws ApiError
// (400) naming the field for a malformed, unsupported or impossible schema or
// grammar, or for more than one of them.
std::shared_ptr<const model::Grammar> parse_output_grammar(const nlohmann::json& parsed, std::string_view raw_body);

// The vocabulary's token trie, built on first use and shared by every request.
class GrammarVocabularySource {
 public:
  explicit GrammarVocabularySource(const model::Tokenizer& tokenizer) : tokenizer_(tokenizer) {}
  std::shared_ptr<model::TokenConstraint> constraint(std::shared_ptr<const model::Grammar> grammar);
  // A tool-call grammar's: the format's marker tokens stand for their text.
  // One format per server (the model's template's).
  std::shared_ptr<model::TokenConstraint> tool_constraint(std::shared_ptr<const model::Grammar> grammar,
                                                          model::ToolCallFormat format);

 private:
  const model::Tokenizer& tokenizer_;
  std::once_flag once_, tool_once_;
  std::shared_ptr<const model::GrammarVocabulary> vocabulary_, tool_vocabulary_;
};

}  // namespace lamina::serve
