// The grammar of an output made only of tool calls, per format: what
// tool_choice "required" or a named function constrains decoding to. Each
// function's arguments follow its parameters' schema (compiled by the JSON
// schema compiler, one rule prefix per function); the markers and the call
// objects are written as the chat templates show them to the models, and as
// the parsers in this folder read them back.
#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>
#include <vector>

#include "grammar/json_schema.h"
#include "lamina/model/tool_calls.h"
#include "tool_calls/regions.h"

namespace lamina::model {
namespace {

using grammar::gbnf_literal;
using namespace tool_calls;

std::string literal(std::string_view a, std::string_view b = {}) { return gbnf_literal(std::string(a) + std::string(b)); }

std::string json_text(std::string_view text) { return nlohmann::json(std::string(text)).dump(-1, ' ', false); }

// A JSON call object {"name": "NAME", KEY: ARGS} with the template's spacing
// (one optional space between tokens, as the schema rules allow).
std::string call_object(const std::string& name, const char* args_key, const std::string& args_rule) {
  return "\"{\" ws " + gbnf_literal(json_text("name")) + " ws \":\" ws " + gbnf_literal(json_text(name)) +
         " ws \",\" ws " + gbnf_literal(json_text(args_key)) + " ws \":\" ws " + args_rule + " ws \"}\"";
}

// One call of a function, as the format writes it.
std::string function_call(ToolCallFormat format, const std::string& name, const std::string& args) {
  switch (format) {
    case ToolCallFormat::Hermes:
      return literal(kHermesOpen, "\n") + " " + call_object(name, "arguments", args) + " " +
             literal("\n", kHermesClose);
    case ToolCallFormat::Llama3Json: return call_object(name, "parameters", args);
    case ToolCallFormat::Mistral: return call_object(name, "arguments", args);  // an item of the list
    case ToolCallFormat::Harmony:
      return literal(kHarmonyChannel, "commentary to=" + std::string(kHarmonyFunctions) + name) + " (" +
             literal(" ", std::string(kHarmonyConstrain) + "json") + ")? " + literal(kHarmonyMessage) + " " + args;
  }
  throw std::invalid_argument("unknown tool-call format");
}

// The whole reply: `call` one call (of any allowed function); Mistral's
// `named` one NAME[ARGS]{...}, the shape its newer templates teach beside the list.
std::string reply(ToolCallFormat format, bool parallel) {
  // `item` repeated after `separator` when parallel calls are allowed.
  const auto list = [&](const std::string& item, const std::string& separator) {
    return parallel ? item + " (" + separator + " " + item + ")*" : item;
  };
  switch (format) {
    case ToolCallFormat::Hermes: return list("call", literal("\n"));
    case ToolCallFormat::Llama3Json: return list("call", literal("; "));
    case ToolCallFormat::Mistral:
      return literal(kMistralMarker) + " (\"[\" " + list("call", "\",\" ws") + " \"]\" | " +
             list("named", literal(kMistralMarker)) + ")";
    case ToolCallFormat::Harmony: return "call";  // each call ends the assistant's turn
  }
  throw std::invalid_argument("unknown tool-call format");
}

// The parameters' schema, checked to describe objects only: the parsers
// read arguments that are objects. A schema without a type gets "object".
std::string object_schema(const std::string& parameters) {
  auto schema = nlohmann::ordered_json::parse(parameters, nullptr, false);
  if (schema.is_discarded()) throw GrammarError("the JSON schema is not valid JSON");
  if (!schema.is_object()) throw GrammarError("the JSON schema must be an object with \"type\": \"object\"");
  const auto type = schema.find("type");
  if (type == schema.end()) {
    for (const char* key : {"$ref", "anyOf", "oneOf", "allOf", "enum", "const"})
      if (schema.contains(key))
        throw GrammarError(std::string("'") + key + "' at the top of function parameters is not supported: give \"type\": \"object\"");
    schema["type"] = "object";
  } else if (*type != "object") {
    throw GrammarError("function parameters must have \"type\": \"object\", not " + type->dump());
  }
  return schema.dump();
}

}  // namespace

std::string tool_call_gbnf(ToolCallFormat format, const std::vector<ToolFunction>& functions, bool parallel) {
  if (functions.empty()) throw std::invalid_argument("a tool-call grammar needs at least one function");
  std::string rules, call, named;
  for (std::size_t i = 0; i < functions.size(); ++i) {
    const ToolFunction& f = functions[i];
    // Built by appending: GCC 12 warns falsely (-Wrestrict) on "literal" + std::string temporaries.
    std::string index = std::to_string(i);
    if (f.name.empty()) throw std::invalid_argument("tool function " + index + " has no name");
    std::string prefix = "f";
    prefix += index;
    prefix += '-';
    std::string args = "json-object";
    if (!f.parameters.empty()) {
      try {
        rules += grammar::compile_json_schema_rules(object_schema(f.parameters), JsonSchemaOptions{f.strict},
                                                    prefix);
      } catch (const GrammarError& e) {
        throw GrammarError("the parameters of function '" + f.name + "': " + e.what());
      }
      args = prefix + "root";
    }
    rules += prefix + "call ::= " + function_call(format, f.name, args) + "\n";
    call += (call.empty() ? "" : " | ") + prefix + "call";
    if (format == ToolCallFormat::Mistral) {
      rules += prefix + "named ::= " + literal(f.name) + " " + literal(kMistralArgs) + " " + args + "\n";
      named += (named.empty() ? "" : " | ") + prefix + "named";
    }
  }
  std::string out = "root ::= " + reply(format, parallel) + "\ncall ::= " + call + "\n";
  if (!named.empty()) out += "named ::= " + named + "\n";
  return out + rules + grammar::json_primitives_gbnf();
}

std::shared_ptr<const Grammar> tool_call_grammar(ToolCallFormat format, const std::vector<ToolFunction>& functions,
                                                 bool parallel) {
  return Grammar::from_gbnf(tool_call_gbnf(format, functions, parallel));
}

std::vector<std::string> tool_call_marker_tokens(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::Hermes:
      return {std::string(kHermesOpen), std::string(kHermesClose)};
    case ToolCallFormat::Llama3Json: return {};
    case ToolCallFormat::Mistral:
      return {std::string(kMistralMarker), std::string(kMistralArgs)};
    case ToolCallFormat::Harmony:
      return {std::string(kHarmonyChannel), std::string(kHarmonyConstrain), std::string(kHarmonyMessage)};
  }
  return {};
}

}  // namespace lamina::model
