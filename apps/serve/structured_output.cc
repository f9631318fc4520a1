#include "structured_output.h"

#include <string>

#include "api_error.h"

namespace lamina::serve {
namespace {

// Schemas are read in the order their text lists the properties: the output follows it.
using json = nlohmann::ordered_json;

const json* present(const json& object, const char* key) {
  const auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

ApiError invalid(const std::string& param, const std::string& why) {
  return bad_request("Invalid value for '" + param + "': " + why, param, "invalid_value");
}

// A schema given as an object (or, as some clients send it, JSON text).
std::shared_ptr<const model::Grammar> compile_schema(const json& schema, const std::string& param, bool strict) {
  if (!schema.is_object() && !schema.is_boolean() && !schema.is_string())
    throw bad_request("Invalid type for '" + param + "': expected an object.", param, "invalid_type");
  try {
    return model::Grammar::from_json_schema(schema.is_string() ? schema.get<std::string>() : schema.dump(),
                                            model::JsonSchemaOptions{strict});
  } catch (const model::GrammarError& e) {
    throw invalid(param, e.what());
  }
}

std::shared_ptr<const model::Grammar> response_format_grammar(const json& rf) {
  if (!rf.is_object())
    throw bad_request("Invalid type for 'response_format': expected an object.", "response_format", "invalid_type");
  const json* type = present(rf, "type");
  if (!type || !type->is_string()) throw invalid("response_format.type", "expected text, json_object or json_schema.");
  const std::string t = type->get<std::string>();
  if (t == "text") return nullptr;
  if (t == "json_object") {
    // llama.cpp lets json_object carry a schema.
    if (const json* schema = present(rf, "schema")) return compile_schema(*schema, "response_format.schema", false);
    return model::Grammar::json_object();
  }
  if (t != "json_schema") throw invalid("response_format.type", "'" + t + "' is not one of text, json_object, json_schema.");
  const json* spec = present(rf, "json_schema");
  if (!spec || !spec->is_object())
    throw bad_request("Missing required parameter: 'response_format.json_schema'.", "response_format.json_schema",
                      "missing_required_parameter");
  const json* name = present(*spec, "name");
  if (name && !name->is_string())
    throw bad_request("Invalid type for 'response_format.json_schema.name': expected a string.",
                      "response_format.json_schema.name", "invalid_type");
  bool strict = false;
  if (const json* s = present(*spec, "strict")) {
    if (!s->is_boolean())
      throw bad_request("Invalid type for 'response_format.json_schema.strict': expected a boolean.",
                        "response_format.json_schema.strict", "invalid_type");
    strict = s->get<bool>();
  }
  const json* schema = present(*spec, "schema");
  // OpenAI: no schema means any JSON object.
  if (!schema) return model::Grammar::json_object();
  return compile_schema(*schema, "response_format.json_schema.schema", strict);
}

}  // namespace

std::shared_ptr<const model::Grammar> parse_output_grammar(const nlohmann::json& parsed, std::string_view raw_body) {
  bool any = false;
  for (const char* key : {"response_format", "json_schema", "grammar"}) any = any || parsed.contains(key);
  if (!any) return nullptr;
  // parse_json_body accepted the text already, limits included.
  const json body = json::parse(raw_body);
  std::shared_ptr<const model::Grammar> grammar;
  int asked = 0;
  if (const json* rf = present(body, "response_format")) {
    grammar = response_format_grammar(*rf);
    asked += grammar != nullptr;
  }
  if (const json* schema = present(body, "json_schema")) {
    grammar = compile_schema(*schema, "json_schema", false);
    ++asked;
  }
  if (const json* g = present(body, "grammar")) {
    if (!g->is_string())
      throw bad_request("Invalid type for 'grammar': expected a string.", "grammar", "invalid_type");
    if (!g->get_ref<const std::string&>().empty()) {
      try {
        grammar = model::Grammar::from_gbnf(g->get<std::string>());
      } catch (const model::GrammarError& e) {
        throw invalid("grammar", e.what());
      }
      ++asked;
    }
  }
  if (asked > 1)
    throw bad_request("Give at most one of 'response_format' (json_object or json_schema), 'json_schema' and 'grammar'.",
                      "grammar", "invalid_value");
  return grammar;
}

std::shared_ptr<model::TokenConstraint> GrammarVocabularySource::constraint(
    std::shared_ptr<const model::Grammar> grammar) {
  std::call_once(once_, [&] { vocabulary_ = model::GrammarVocabulary::from_tokenizer(tokenizer_); });
  return std::make_shared<model::TokenConstraint>(std::move(grammar), vocabulary_);
}

std::shared_ptr<model::TokenConstraint> GrammarVocabularySource::tool_constraint(
    std::shared_ptr<const model::Grammar> grammar, model::ToolCallFormat format) {
  std::call_once(tool_once_, [&] {
    tool_vocabulary_ = model::GrammarVocabulary::from_tokenizer(tokenizer_, model::tool_call_marker_tokens(format));
  });
  return std::make_shared<model::TokenConstraint>(std::move(grammar), tool_vocabulary_);
}

}  // namespace lamina::serve
