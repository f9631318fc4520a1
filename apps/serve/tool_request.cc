#include "tool_request.h"

#include <set>

#include "api_error.h"
#include "lamina/gguf/file.h"

namespace lamina::serve {
namespace {

using json = nlohmann::json;
// What templates see keeps the client's key order, as transformers passes it.
using ordered_json = nlohmann::ordered_json;

template <typename Json>
const Json* field(const Json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

ApiError invalid(const std::string& param, const std::string& why) {
  return bad_request("Invalid value for '" + param + "': " + why, param, "invalid_value");
}

ApiError wrong_type(const std::string& param, const std::string& expected) {
  return bad_request("Invalid type for '" + param + "': expected " + expected + ".", param, "invalid_type");
}

// The function names of `tools`, each checked to be {"type": "function", "function": {"name": ...}}.
std::set<std::string> function_names(const json& tools) {
  std::set<std::string> names;
  for (std::size_t i = 0; i < tools.size(); ++i) {
    const std::string param = "tools[" + std::to_string(i) + "]";
    const json& tool = tools[i];
    if (!tool.is_object()) throw wrong_type(param, "an object");
    const json* type = field(tool, "type");
    if (!type || *type != "function") throw invalid(param + ".type", "only \"function\" tools are supported.");
    const json* function = field(tool, "function");
    if (!function || !function->is_object()) throw wrong_type(param + ".function", "an object");
    const json* name = field(*function, "name");
    if (!name || !name->is_string() || name->get_ref<const std::string&>().empty())
      throw wrong_type(param + ".function.name", "a non-empty string");
    if (!names.insert(name->get<std::string>()).second)
      throw invalid(param + ".function.name", "the function '" + name->get<std::string>() + "' is defined twice.");
  }
  return names;
}

void parse_choice(const json& choice, const std::set<std::string>& names, ToolRequest& r) {
  if (choice.is_string()) {
    const std::string& s = choice.get_ref<const std::string&>();
    if (s == "auto") r.choice = ToolRequest::Choice::Auto;
    else if (s == "none") r.choice = ToolRequest::Choice::None;
    else if (s == "required") r.choice = ToolRequest::Choice::Required;
    else throw invalid("tool_choice", "expected 'none', 'auto', 'required' or a function, got '" + s + "'.");
  } else if (choice.is_object()) {
    const json* type = field(choice, "type");
    const json* function = field(choice, "function");
    const json* name = function && function->is_object() ? field(*function, "name") : nullptr;
    if (!type || *type != "function" || !name || !name->is_string())
      throw invalid("tool_choice", "expected {\"type\": \"function\", \"function\": {\"name\": ...}}.");
    r.choice = ToolRequest::Choice::Named;
    r.function = name->get<std::string>();
    if (!names.contains(r.function))
      throw invalid("tool_choice", "the function '" + r.function + "' is not among the tools.");
  } else {
    throw wrong_type("tool_choice", "a string or an object");
  }
  if (names.empty() && (r.choice == ToolRequest::Choice::Required || r.choice == ToolRequest::Choice::Named))
    throw invalid("tool_choice", "tool_choice requires tools.");
}

}  // namespace

ToolRequest parse_tool_request(const json& body) {
  ToolRequest r;
  std::set<std::string> names;
  const json* tools = field(body, "tools");
  if (tools) {
    if (!tools->is_array()) throw wrong_type("tools", "an array");
    names = function_names(*tools);
  }
  if (const json* choice = field(body, "tool_choice")) parse_choice(*choice, names, r);
  if (const json* parallel = field(body, "parallel_tool_calls")) {
    if (!parallel->is_boolean()) throw wrong_type("parallel_tool_calls", "a boolean");
    r.parallel = parallel->get<bool>();
  }
  if (tools && !tools->empty() && r.choice != ToolRequest::Choice::None) r.tools_json = tools->dump();
  return r;
}

void shape_tool_calls(ordered_json& fields, std::size_t index) {
  if (!field(fields, "tool_calls")) return;
  // Clients echo a reply's calls with content null; templates read the content
  // as text (Qwen 3's tests `'</think>' in message.content`), so it goes as "".
  // (Erased first: erasing from an ordered object moves the members after it.)
  if (const auto content = fields.find("content"); content != fields.end() && content->is_null()) fields.erase(content);
  const auto it = fields.find("tool_calls");
  const std::string param = "messages[" + std::to_string(index) + "].tool_calls";
  if (!it->is_array()) throw wrong_type(param, "an array");
  for (std::size_t i = 0; i < it->size(); ++i) {
    ordered_json& call = (*it)[i];
    const std::string call_param = param + "[" + std::to_string(i) + "]";
    if (!call.is_object()) throw wrong_type(call_param, "an object");
    ordered_json* function = call.contains("function") ? &call["function"] : nullptr;
    if (!function || !function->is_object()) throw wrong_type(call_param + ".function", "an object");
    const ordered_json* name = field(*function, "name");
    if (!name || !name->is_string()) throw wrong_type(call_param + ".function.name", "a string");
    const auto args = function->find("arguments");
    if (args == function->end() || !args->is_string()) continue;
    // Clients send the arguments as JSON text; templates expect the object (an
    // empty text stands for no arguments).
    const std::string& text = args->get_ref<const std::string&>();
    ordered_json parsed = text.empty() ? ordered_json::object() : ordered_json::parse(text, nullptr, false);
    if (!parsed.is_object())
      throw invalid(call_param + ".function.arguments", "expected a JSON object encoded as a string.");
    *args = std::move(parsed);
  }
}

std::string tools_in_client_order(const ToolRequest& tools, std::string_view raw_body) {
  if (!tools.offered()) return {};
  // parse_json_body accepted the text already (limits, no repeated keys).
  return ordered_json::parse(raw_body).at("tools").dump();
}

std::shared_ptr<const model::Grammar> constrain_tool_choice(const ToolRequest& tools,
                                                            const std::optional<model::ToolCallFormat>& format,
                                                            model::CompletionRequest& request) {
  if (!tools.offered()) return nullptr;
  if (!format)
    throw invalid("tools", "this model's chat template does not teach a tool-call format this server parses "
                           "(Hermes <tool_call>, Llama 3 JSON, Mistral [TOOL_CALLS], gpt-oss harmony).");
  // The markers must survive decoding for the output to be split into calls.
  if (model::tool_call_markers_are_special(*format)) request.skip_special_tokens = false;
  if (tools.choice != ToolRequest::Choice::Required && tools.choice != ToolRequest::Choice::Named) return nullptr;
  // The output is forced to be calls: every tool (required) or the named one.
  const ordered_json all = ordered_json::parse(tools.tools_json);
  std::vector<model::ToolFunction> functions;
  std::vector<std::size_t> index;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const ordered_json& f = all[i].at("function");
    model::ToolFunction function{f.at("name").get<std::string>(), {}, false};
    if (tools.choice == ToolRequest::Choice::Named && function.name != tools.function) continue;
    const std::string param = "tools[" + std::to_string(i) + "].function";
    if (const ordered_json* p = field(f, "parameters")) {
      if (!p->is_object()) throw wrong_type(param + ".parameters", "an object");
      function.parameters = p->dump();
    }
    if (const ordered_json* strict = field(f, "strict")) {
      if (!strict->is_boolean()) throw wrong_type(param + ".strict", "a boolean");
      function.strict = strict->get<bool>();
    }
    functions.push_back(std::move(function));
    index.push_back(i);
  }
  try {
    return model::tool_call_grammar(*format, functions, tools.parallel);
  } catch (const model::GrammarError& e) {
    // Name the tool whose parameters failed.
    for (std::size_t k = 0; k < functions.size(); ++k) {
      try {
        model::tool_call_grammar(*format, {functions[k]}, false);
      } catch (const model::GrammarError&) {
        throw invalid("tools[" + std::to_string(index[k]) + "].function.parameters", e.what());
      }
    }
    throw invalid("tools", e.what());
  }
}

std::optional<model::ToolCallFormat> tool_call_format_of(const model::Model& model, const model::ChatPrompt& chat) {
  if (!chat.follows_model()) return std::nullopt;
  const auto* v = model.file().find("tokenizer.chat_template");
  if (!v || v->type() != gguf::ValueType::String) return std::nullopt;
  return model::detect_tool_call_format(v->as_string());
}

}  // namespace lamina::serve
