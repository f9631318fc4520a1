#include "openai_response.h"

#include <cmath>
#include <random>

namespace lamina::serve {
namespace {

using json = ResponseJson;

// OpenAI reports impossible tokens as -9999 rather than -infinity (which JSON cannot hold).
constexpr float kImpossibleLogprob = -9999.0f;

float finite_logprob(float logprob) { return std::isfinite(logprob) ? logprob : kImpossibleLogprob; }

json byte_values(const std::string& piece) {
  json bytes = json::array();
  for (const char c : piece) bytes.push_back(static_cast<unsigned char>(c));
  return bytes;
}

json chat_token_logprob(const model::Tokenizer& tokenizer, const model::TokenLogprob& t) {
  const std::string piece = tokenizer.token_to_piece(t.id);
  return {{"token", piece}, {"logprob", finite_logprob(t.logprob)}, {"bytes", byte_values(piece)}};
}

const char* object_name(Endpoint endpoint, bool chunk) {
  if (endpoint == Endpoint::ChatCompletions) return chunk ? "chat.completion.chunk" : "chat.completion";
  return "text_completion";
}

json response_head(const ResponseMeta& meta, bool chunk) {
  return {{"id", meta.id},
          {"object", object_name(meta.endpoint, chunk)},
          {"created", meta.created},
          {"model", meta.model},
          {"system_fingerprint", meta.system_fingerprint}};
}

}  // namespace

std::string make_response_id(Endpoint endpoint, uint64_t random) {
  static constexpr std::string_view kAlphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  std::mt19937_64 bits(random);
  std::string id = endpoint == Endpoint::ChatCompletions ? "chatcmpl-" : "cmpl-";
  for (int i = 0; i < 29; ++i) id += kAlphabet[bits() % kAlphabet.size()];
  return id;
}

std::string dump_json(const ResponseJson& value) {
  return value.dump(-1, ' ', false, ResponseJson::error_handler_t::replace);
}

std::string dump_json(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

json error_json(const ApiError& error) {
  return {{"error",
           {{"message", error.what()},
            {"type", error.type()},
            {"param", error.param().empty() ? json(nullptr) : json(error.param())},
            {"code", error.code().empty() ? json(nullptr) : json(error.code())}}}};
}

std::string_view openai_finish_reason(model::FinishReason reason) {
  // OpenAI ends for the context as for max_tokens.
  const bool cut = reason == model::FinishReason::Length || reason == model::FinishReason::ContextFull;
  return cut ? "length" : "stop";
}

json usage_json(const model::CompletionResult& result) { return usage_json(std::span(&result, 1)); }

json usage_json(std::span<const model::CompletionResult> choices) {
  std::size_t completion = 0;
  for (const model::CompletionResult& c : choices) completion += c.generated_ids.size();
  const uint32_t prompt = choices.empty() ? 0 : choices.front().prompt_tokens;
  const uint32_t cached = choices.empty() ? 0 : choices.front().cached_prompt_tokens;
  return {{"prompt_tokens", prompt},
          {"completion_tokens", completion},
          {"total_tokens", prompt + completion},
          {"prompt_tokens_details", {{"cached_tokens", cached}}}};
}

json logprobs_json(Endpoint endpoint, const model::Tokenizer& tokenizer, std::span<const model::TokenEvent> tokens,
                   std::size_t text_offset) {
  if (endpoint == Endpoint::ChatCompletions) {
    json content = json::array();
    for (const model::TokenEvent& t : tokens) {
      json entry = chat_token_logprob(tokenizer, t.chosen);
      json top = json::array();
      for (const model::TokenLogprob& alt : t.top) top.push_back(chat_token_logprob(tokenizer, alt));
      entry["top_logprobs"] = std::move(top);
      content.push_back(std::move(entry));
    }
    return {{"content", std::move(content)}, {"refusal", nullptr}};
  }
  json pieces = json::array(), values = json::array(), top = json::array(), offsets = json::array();
  for (const model::TokenEvent& t : tokens) {
    const std::string piece = tokenizer.token_to_piece(t.chosen.id);
    pieces.push_back(piece);
    values.push_back(finite_logprob(t.chosen.logprob));
    json alternatives = json::object();
    for (const model::TokenLogprob& alt : t.top)
      alternatives[tokenizer.token_to_piece(alt.id)] = finite_logprob(alt.logprob);
    top.push_back(std::move(alternatives));
    offsets.push_back(text_offset);
    text_offset += piece.size();
  }
  return {{"tokens", std::move(pieces)},
          {"token_logprobs", std::move(values)},
          {"top_logprobs", std::move(top)},
          {"text_offset", std::move(offsets)}};
}

json completion_response(const ResponseMeta& meta, const model::CompletionResult& result, const json& logprobs) {
  return completion_response(meta, std::span(&result, 1), std::span(&logprobs, 1));
}

json completion_response(const ResponseMeta& meta, std::span<const model::CompletionResult> results,
                         std::span<const json> logprobs) {
  json choices = json::array();
  for (std::size_t i = 0; i < results.size(); ++i) {
    const model::CompletionResult& result = results[i];
    if (meta.endpoint == Endpoint::ChatCompletions) {
      choices.push_back({{"index", i},
                         {"message", {{"role", "assistant"}, {"content", result.text}, {"refusal", nullptr}}},
                         {"logprobs", logprobs[i]},
                         {"finish_reason", openai_finish_reason(result.finish)}});
    } else {
      choices.push_back({{"text", result.text},
                         {"index", i},
                         {"logprobs", logprobs[i]},
                         {"finish_reason", openai_finish_reason(result.finish)}});
    }
  }
  json response = response_head(meta, false);
  response["choices"] = std::move(choices);
  response["usage"] = usage_json(results);
  return response;
}

std::string sse_event(const json& value) { return "data: " + dump_json(value) + "\n\n"; }

StreamEncoder::StreamEncoder(ResponseMeta meta, bool include_usage, const model::Tokenizer* tokenizer,
                             std::size_t index)
    : meta_(std::move(meta)), include_usage_(include_usage), tokenizer_(tokenizer), index_(index) {}

json StreamEncoder::chunk(json choice) const {
  choice["index"] = index_;
  json c = response_head(meta_, true);
  c["choices"] = json::array({std::move(choice)});
  if (include_usage_) c["usage"] = nullptr;
  return c;
}

std::string StreamEncoder::start() {
  if (meta_.endpoint != Endpoint::ChatCompletions) return {};
  return sse_event(chunk({{"index", 0},
                          {"delta", {{"role", "assistant"}, {"content", ""}}},
                          {"logprobs", nullptr},
                          {"finish_reason", nullptr}}));
}

std::string StreamEncoder::tokens(std::span<const model::TokenEvent> tokens) {
  std::string text;
  for (const model::TokenEvent& t : tokens) text += t.text;
  if (text.empty() && (tokenizer_ == nullptr || tokens.empty())) return {};
  json logprobs = tokenizer_ ? logprobs_json(meta_.endpoint, *tokenizer_, tokens, text_offset_) : json(nullptr);
  text_offset_ += text.size();
  if (meta_.endpoint == Endpoint::ChatCompletions) {
    return sse_event(chunk({{"index", 0},
                            {"delta", {{"content", std::move(text)}}},
                            {"logprobs", std::move(logprobs)},
                            {"finish_reason", nullptr}}));
  }
  return sse_event(
      chunk({{"text", std::move(text)}, {"index", 0}, {"logprobs", std::move(logprobs)}, {"finish_reason", nullptr}}));
}

std::string StreamEncoder::delta(json delta, std::span<const model::TokenEvent> tokens) {
  json logprobs = tokenizer_ && !tokens.empty() ? logprobs_json(meta_.endpoint, *tokenizer_, tokens) : json(nullptr);
  return sse_event(
      chunk({{"index", 0}, {"delta", std::move(delta)}, {"logprobs", std::move(logprobs)}, {"finish_reason", nullptr}}));
}

std::string StreamEncoder::finish(const model::CompletionResult& result, std::string_view finish_reason) {
  return finish_choice(result, finish_reason) + close(std::span(&result, 1));
}

std::string StreamEncoder::finish_choice(const model::CompletionResult& result, std::string_view finish_reason) {
  const std::string_view reason = finish_reason.empty() ? openai_finish_reason(result.finish) : finish_reason;
  std::string out;
  // Text held back for a possible stop string that never completed (the
  // request ended on an end-of-generation token) still belongs to the reply.
  if (!result.text_tail.empty()) {
    if (meta_.endpoint == Endpoint::ChatCompletions) {
      out = sse_event(chunk({{"index", 0},
                             {"delta", {{"content", result.text_tail}}},
                             {"logprobs", nullptr},
                             {"finish_reason", nullptr}}));
    } else {
      out = sse_event(chunk({{"text", result.text_tail}, {"index", 0}, {"logprobs", nullptr}, {"finish_reason", nullptr}}));
    }
    text_offset_ += result.text_tail.size();
  }
  if (meta_.endpoint == Endpoint::ChatCompletions) {
    out += sse_event(chunk({{"index", 0}, {"delta", json::object()}, {"logprobs", nullptr}, {"finish_reason", reason}}));
  } else {
    out += sse_event(chunk({{"text", ""}, {"index", 0}, {"logprobs", nullptr}, {"finish_reason", reason}}));
  }
  return out;
}

std::string StreamEncoder::close(std::span<const model::CompletionResult> choices) {
  std::string out;
  if (include_usage_) {
    json usage = response_head(meta_, true);
    usage["choices"] = json::array();
    usage["usage"] = usage_json(choices);
    out += sse_event(usage);
  }
  out += kSseDone;
  return out;
}

std::string StreamEncoder::error(const ApiError& error) {
  std::string out = sse_event(error_json(error));
  out += kSseDone;
  return out;
}

}  // namespace lamina::serve
