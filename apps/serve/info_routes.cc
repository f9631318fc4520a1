// The routes that do not generate: health, models, metrics, tokenize and
// detokenize (the last two in llama.cpp's server shapes).
#include <limits>

#include "api_error.h"
#include "json_body.h"
#include "openai_response.h"
#include "routes.h"

namespace lamina::serve {
namespace {

using json = ResponseJson;

Reply json_reply(const json& value) {
  Reply r;
  r.body = dump_json(value);
  return r;
}

json model_entry(const ServeContext& ctx) {
  const model::ModelConfig& c = ctx.model.config();
  return {{"id", ctx.options.model_name},
          {"object", "model"},
          {"created", ctx.started},
          {"owned_by", "lamina"},
          {"meta",
           {{"n_ctx", ctx.engine.n_ctx()},
            {"n_ctx_train", c.n_ctx_train},
            {"n_vocab", c.n_vocab},
            {"n_params", ctx.model.n_params()},
            {"size", ctx.model.weight_bytes()}}}};
}

bool optional_bool(const nlohmann::json& body, const char* key, bool fallback) {
  const auto it = body.find(key);
  if (it == body.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) throw bad_request(std::string("Invalid type for '") + key + "': expected a boolean.", key,
                                           "invalid_type");
  return it->get<bool>();
}

}  // namespace

Reply error_reply(const ApiError& error) {
  Reply r;
  r.status = error.status();
  r.body = dump_json(error_json(error));
  if (error.status() == 429 || error.status() == 503) r.headers.emplace_back("Retry-After", "1");
  return r;
}

Reply handle_health(ServeContext& ctx) {
  if (ctx.draining.load())
    throw ApiError(503, "The server is shutting down.", "server_error", {}, "server_shutting_down");
  return json_reply({{"status", "ok"}});
}

Reply handle_models(ServeContext& ctx) {
  return json_reply({{"object", "list"}, {"data", json::array({model_entry(ctx)})}});
}

Reply handle_model(ServeContext& ctx, std::string_view id) {
  if (id != ctx.options.model_name)
    throw ApiError(404, "The model `" + std::string(id) + "` does not exist.", "invalid_request_error", "model",
                   "model_not_found");
  return json_reply(model_entry(ctx));
}

Reply handle_metrics(ServeContext& ctx) {
  LiveGauges live;
  live.engine = ctx.engine.stats();
  live.http_in_flight = ctx.in_flight.count();
  Reply r;
  r.content_type = "text/plain; version=0.0.4; charset=utf-8";
  r.body = ctx.metrics.render(live);
  return r;
}

// The answer is written as it is built: a document of one object per token
// would take tens of times the text's size.
Reply handle_tokenize(ServeContext& ctx, std::string_view body) {
  const nlohmann::json request = parse_json_body(body);
  const auto content = request.find("content");
  if (content == request.end() || !content->is_string())
    throw bad_request("Invalid type for 'content': expected a string.", "content", "invalid_type");
  const std::string& text = content->get_ref<const std::string&>();
  if (text.size() > ctx.max_prompt_bytes)
    throw bad_request("The content is longer than any text of this model's context (" +
                          std::to_string(ctx.engine.n_ctx()) + " tokens) can be: at most " +
                          std::to_string(ctx.max_prompt_bytes) + " bytes are tokenized.",
                      "content", "context_length_exceeded");
  const bool add_special = optional_bool(request, "add_special", false);
  const bool parse_special = optional_bool(request, "parse_special", true);
  const bool with_pieces = optional_bool(request, "with_pieces", false);
  const model::Tokenizer& tok = ctx.model.tokenizer();
  const std::vector<int32_t> ids = tok.encode(text, add_special, parse_special);
  Reply r;
  r.body = "{\"tokens\":[";
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i) r.body += ',';
    if (with_pieces) {
      r.body += "{\"id\":" + std::to_string(ids[i]) + ",\"piece\":" + dump_json(json(tok.token_to_piece(ids[i]))) + "}";
    } else {
      r.body += std::to_string(ids[i]);
    }
  }
  r.body += "]}";
  return r;
}

Reply handle_detokenize(ServeContext& ctx, std::string_view body) {
  const nlohmann::json request = parse_json_body(body);
  const auto tokens = request.find("tokens");
  if (tokens == request.end() || !tokens->is_array())
    throw bad_request("Invalid type for 'tokens': expected an array of token ids.", "tokens", "invalid_type");
  const model::Tokenizer& tok = ctx.model.tokenizer();
  std::vector<int32_t> ids;
  for (const nlohmann::json& id : *tokens) {
    const bool in_range = id.is_number_integer() && !(id.is_number_unsigned() && id.get<uint64_t>() >= 1ull << 31) &&
                          id.get<int64_t>() >= 0 && id.get<int64_t>() < tok.n_vocab();
    if (!in_range)
      throw bad_request("Invalid value for 'tokens': " + dump_json(id) + " is not a token id of this model (0 to " +
                            std::to_string(tok.n_vocab() - 1) + ").",
                        "tokens", "invalid_value");
    ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
  }
  // As Hugging Face's decode: special tokens shown unless skip_special_tokens.
  const bool skip_special = optional_bool(request, "skip_special_tokens", false);
  return json_reply({{"content", tok.decode(ids, {.render_special = !skip_special})}});
}

}  // namespace lamina::serve
