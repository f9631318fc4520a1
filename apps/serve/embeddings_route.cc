// POST /v1/embeddings: texts or token arrays through the engine's hidden
// states, pooled as the server was started (the GGUF's pooling_type or
// --pooling), unit length, as floats or base64 (little-endian f32).
#include <bit>
#include <cstring>
#include <future>
#include <limits>
#include <string>
#include <vector>

#include "json_body.h"
#include "openai_response.h"
#include "routes.h"

namespace lamina::serve {
namespace {

using json = nlohmann::json;

// OpenAI's limit on inputs per request.
constexpr std::size_t kMaxInputs = 2048;

ApiError invalid_input(const std::string& param, const std::string& why) {
  return bad_request("Invalid value for '" + param + "': " + why, param, "invalid_value");
}

std::string input_param(std::size_t i, bool many) { return many ? "input[" + std::to_string(i) + "]" : "input"; }

std::vector<int32_t> token_array(const ServeContext& ctx, const json& ids, const std::string& param) {
  const int32_t n_vocab = ctx.model.tokenizer().n_vocab();
  std::vector<int32_t> out;
  for (const json& id : ids) {
    const bool in_range = id.is_number_integer() && !(id.is_number_unsigned() && id.get<uint64_t>() >= 1ull << 31) &&
                          id.get<int64_t>() >= 0 && id.get<int64_t>() < n_vocab;
    if (!in_range)
      throw invalid_input(param, dump_json(id) + " is not a token id of this model (0 to " +
                                     std::to_string(n_vocab - 1) + ").");
    out.push_back(static_cast<int32_t>(id.get<int64_t>()));
  }
  return out;
}

std::vector<int32_t> text_ids(const ServeContext& ctx, const json& text, const std::string& param) {
  const std::string& s = text.get_ref<const std::string&>();
  if (s.empty()) throw invalid_input(param, "the input is empty.");
  if (s.size() > ctx.max_prompt_bytes)
    throw bad_request("This model's maximum context length is " + std::to_string(ctx.engine.n_ctx()) +
                          " tokens; '" + param + "' is longer.",
                      param, "context_length_exceeded");
  return ctx.model.tokenizer().encode(s, /*add_special=*/true, /*parse_special=*/false);
}

// A string, an array of strings, an array of token ids, or an array of those.
std::vector<std::vector<int32_t>> parse_inputs(const ServeContext& ctx, const json& body) {
  const auto it = body.find("input");
  if (it == body.end() || it->is_null())
    throw bad_request("Missing required parameter: 'input'.", "input", "missing_required_parameter");
  const json& input = *it;
  std::vector<std::vector<int32_t>> inputs;
  if (input.is_string()) {
    inputs.push_back(text_ids(ctx, input, "input"));
  } else if (input.is_array() && !input.empty() && input[0].is_number()) {
    inputs.push_back(token_array(ctx, input, "input"));
  } else if (input.is_array() && !input.empty()) {
    if (input.size() > kMaxInputs)
      throw invalid_input("input", "at most " + std::to_string(kMaxInputs) + " inputs per request.");
    for (std::size_t i = 0; i < input.size(); ++i) {
      const std::string param = input_param(i, true);
      if (input[i].is_string())
        inputs.push_back(text_ids(ctx, input[i], param));
      else if (input[i].is_array())
        inputs.push_back(token_array(ctx, input[i], param));
      else
        throw bad_request("Invalid type for '" + param + "': expected a string or an array of token ids.", param,
                          "invalid_type");
    }
  } else {
    throw bad_request("Invalid type for 'input': expected a non-empty string, array of strings or array of token ids.",
                      "input", "invalid_type");
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const std::string param = input_param(i, inputs.size() > 1 || (input.is_array() && !input[0].is_number()));
    if (inputs[i].empty()) throw invalid_input(param, "the input is empty.");
    if (inputs[i].size() >= ctx.engine.n_ctx())
      throw bad_request("This model's maximum context length is " + std::to_string(ctx.engine.n_ctx()) +
                            " tokens. However, '" + param + "' resulted in " + std::to_string(inputs[i].size()) +
                            " tokens.",
                        param, "context_length_exceeded");
  }
  return inputs;
}

std::string base64_f32(const std::vector<float>& v) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::vector<unsigned char> bytes(v.size() * 4);
  for (std::size_t i = 0; i < v.size(); ++i) {
    const uint32_t bits = std::bit_cast<uint32_t>(v[i]);
    for (int b = 0; b < 4; ++b) bytes[i * 4 + b] = static_cast<unsigned char>(bits >> (8 * b));  // little-endian
  }
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    const uint32_t n = (uint32_t{bytes[i]} << 16) | (i + 1 < bytes.size() ? uint32_t{bytes[i + 1]} << 8 : 0) |
                       (i + 2 < bytes.size() ? uint32_t{bytes[i + 2]} : 0);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? kAlphabet[n & 63] : '=';
  }
  return out;
}

}  // namespace

Reply handle_embeddings(ServeContext& ctx, std::string_view body_text) {
  if (ctx.draining.load()) throw ApiError(503, "The server is shutting down.", "server_error", {}, "server_shutting_down");
  const json body = parse_json_body(body_text);
  if (const auto m = body.find("model"); m != body.end() && !m->is_null()) {
    if (!m->is_string()) throw bad_request("Invalid type for 'model': expected a string.", "model", "invalid_type");
    if (m->get<std::string>() != ctx.options.model_name)
      throw ApiError(404, "The model `" + m->get<std::string>() + "` does not exist.", "invalid_request_error",
                     "model", "model_not_found");
  }
  bool base64 = false;
  if (const auto f = body.find("encoding_format"); f != body.end() && !f->is_null()) {
    if (*f != "float" && *f != "base64")
      throw invalid_input("encoding_format", "expected 'float' or 'base64'.");
    base64 = *f == "base64";
  }
  const uint32_t n_embd = ctx.model.config().n_embd;
  if (const auto d = body.find("dimensions"); d != body.end() && !d->is_null()) {
    if (!d->is_number_integer() || d->get<int64_t>() != n_embd)
      throw invalid_input("dimensions", "this model's embeddings have " + std::to_string(n_embd) +
                                            " dimensions; others are not supported.");
  }
  model::EmbeddingRequest request{parse_inputs(ctx, body), ctx.options.pooling};
  std::size_t tokens = 0;
  for (const auto& ids : request.inputs) tokens += ids.size();

  std::promise<model::EmbeddingResult> done;
  std::future<model::EmbeddingResult> result = done.get_future();
  if (!ctx.engine.embed(std::move(request), [&done](model::EmbeddingResult r) { done.set_value(std::move(r)); })) {
    if (ctx.draining.load()) throw ApiError(503, "The server is shutting down.", "server_error", {}, "server_shutting_down");
    throw ApiError(429, "The server is busy: the embedding queue is full. Try again later.", "rate_limit_error", {},
                   "queue_full");
  }
  const model::EmbeddingResult r = result.get();
  if (!r.error.empty()) throw ApiError(501, "Embeddings failed: " + r.error, "server_error");

  ResponseJson data = ResponseJson::array();
  for (std::size_t i = 0; i < r.vectors.size(); ++i) {
    ResponseJson item = {{"object", "embedding"}, {"index", i}};
    item["embedding"] = base64 ? ResponseJson(base64_f32(r.vectors[i])) : ResponseJson(r.vectors[i]);
    data.push_back(std::move(item));
  }
  ResponseJson response = {{"object", "list"},
                           {"data", std::move(data)},
                           {"model", ctx.options.model_name},
                           {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}};
  Reply reply;
  reply.body = dump_json(response);
  return reply;
}

}  // namespace lamina::serve
