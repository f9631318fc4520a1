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

void send_json(httplib::Response& res, const json& value) { res.set_content(dump_json(value), "application/json"); }

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

void handle_health(ServeContext& ctx, const httplib::Request&, httplib::Response& res) {
  if (ctx.draining.load())
    throw ApiError(503, "The server is shutting down.", "server_error", {}, "server_shutting_down");
  send_json(res, {{"status", "ok"}});
}

void handle_models(ServeContext& ctx, const httplib::Request&, httplib::Response& res) {
  send_json(res, {{"object", "list"}, {"data", json::array({model_entry(ctx)})}});
}

void handle_model(ServeContext& ctx, const httplib::Request& req, httplib::Response& res) {
  const std::string id = req.matches.size() > 1 ? req.matches[1].str() : std::string();
  if (id != ctx.options.model_name)
    throw ApiError(404, "The model `" + id + "` does not exist.", "invalid_request_error", "model",
                   "model_not_found");
  send_json(res, model_entry(ctx));
}

void handle_metrics(ServeContext& ctx, const httplib::Request&, httplib::Response& res) {
  LiveGauges live;
  live.engine = ctx.engine.stats();
  live.http_in_flight = ctx.in_flight.count();
  res.set_content(ctx.metrics.render(live), "text/plain; version=0.0.4; charset=utf-8");
}

void handle_tokenize(ServeContext& ctx, const httplib::Request& req, httplib::Response& res) {
  const nlohmann::json body = parse_json_body(req.body);
  const auto content = body.find("content");
  if (content == body.end() || !content->is_string())
    throw bad_request("Invalid type for 'content': expected a string.", "content", "invalid_type");
  const bool add_special = optional_bool(body, "add_special", false);
  const bool parse_special = optional_bool(body, "parse_special", true);
  const bool with_pieces = optional_bool(body, "with_pieces", false);
  const model::Tokenizer& tok = ctx.model.tokenizer();
  const std::vector<int32_t> ids = tok.encode(content->get<std::string>(), add_special, parse_special);
  json tokens = json::array();
  for (const int32_t id : ids) {
    if (with_pieces)
      tokens.push_back({{"id", id}, {"piece", tok.token_to_piece(id)}});
    else
      tokens.push_back(id);
  }
  send_json(res, {{"tokens", std::move(tokens)}});
}

void handle_detokenize(ServeContext& ctx, const httplib::Request& req, httplib::Response& res) {
  const nlohmann::json body = parse_json_body(req.body);
  const auto tokens = body.find("tokens");
  if (tokens == body.end() || !tokens->is_array())
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
  send_json(res, {{"content", tok.decode(ids)}});
}

}  // namespace lamina::serve
