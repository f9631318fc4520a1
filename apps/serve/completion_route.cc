// POST /v1/chat/completions and /v1/completions: validate, tokenize, queue
// on the engine, then answer once the request ends or stream its tokens as
// Server-Sent Events.
#include <chrono>
#include <memory>
#include <stdexcept>

#include "api_error.h"
#include "completion_channel.h"
#include "json_body.h"
#include "openai_response.h"
#include "request_record.h"
#include "routes.h"

namespace lamina::serve {
namespace {

using Clock = std::chrono::steady_clock;

// While a stream waits (queued, or a long prompt), a comment line every
// second keeps proxies from timing out and finds clients that went away.
constexpr auto kKeepAliveInterval = std::chrono::seconds(1);
constexpr std::string_view kKeepAlive = ": keep-alive\n\n";

class InFlightGuard {
 public:
  explicit InFlightGuard(InFlight& in_flight) : in_flight_(in_flight) { in_flight_.enter(); }
  ~InFlightGuard() { in_flight_.leave(); }
  InFlightGuard(const InFlightGuard&) = delete;
  InFlightGuard& operator=(const InFlightGuard&) = delete;

 private:
  InFlight& in_flight_;
};

ApiError shutting_down() {
  return ApiError(503, "The server is shutting down.", "server_error", {}, "server_shutting_down");
}

const char* endpoint_label(Endpoint endpoint) {
  return endpoint == Endpoint::ChatCompletions ? "chat_completions" : "completions";
}

std::vector<int32_t> prompt_ids(const ServeContext& ctx, const ParsedRequest& r) {
  const model::Tokenizer& tok = ctx.model.tokenizer();
  const bool chat = r.endpoint == Endpoint::ChatCompletions;
  const char* param = chat ? "messages" : "prompt";
  std::vector<int32_t> ids;
  if (chat) {
    try {
      ids = ctx.chat.tokens(r.messages, r.enable_thinking);
    } catch (const std::invalid_argument& e) {
      throw bad_request(std::string("The chat template cannot render these messages: ") + e.what(), param);
    }
  } else if (r.prompt.is_ids) {
    for (const int32_t id : r.prompt.ids) {
      if (id >= tok.n_vocab())
        throw bad_request("Invalid value for 'prompt': token id " + std::to_string(id) +
                              " is outside the vocabulary (" + std::to_string(tok.n_vocab()) + " tokens).",
                          param, "invalid_value");
    }
    ids = r.prompt.ids;
  } else {
    ids = tok.encode(r.prompt.text, /*add_special=*/true, /*parse_special=*/true);
  }
  if (ids.empty()) throw bad_request("The prompt is empty.", param, "invalid_value");
  const uint32_t n_ctx = ctx.engine.n_ctx();
  if (ids.size() >= n_ctx)
    throw bad_request("This model's maximum context length is " + std::to_string(n_ctx) +
                          " tokens. However, your " + (chat ? "messages" : "prompt") + " resulted in " +
                          std::to_string(ids.size()) + " tokens. Please reduce the length of the " + param + ".",
                      param, "context_length_exceeded");
  return ids;
}

void note_result(RequestRecord& rec, const model::CompletionResult& r) {
  rec.prompt_tokens = r.prompt_tokens;
  rec.cached_tokens = r.cached_prompt_tokens;
  rec.generated_tokens = static_cast<uint32_t>(r.generated_ids.size());
  rec.finish = model::finish_reason_name(r.finish);
  rec.first_token_ms = r.generated_ids.empty() ? -1.0 : r.first_token_ms;
}

bool succeeded(const model::CompletionResult& r) {
  return r.finish == model::FinishReason::Stop || r.finish == model::FinishReason::Length;
}

// Why a request that ran did not complete: the server cancelled it while
// shutting down, or generation failed.
ApiError failure(const model::CompletionResult& r) {
  if (r.finish == model::FinishReason::Cancelled) return shutting_down();
  return ApiError(500, "Generation failed: " + r.error, "server_error");
}

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void answer_when_done(ServeContext& ctx, const ResponseMeta& meta, bool logprobs, CompletionChannel& channel,
                      httplib::Response& res) {
  std::vector<model::TokenEvent> tokens;
  model::CompletionResult result;
  for (;;) {
    CompletionChannel::Update u = channel.wait(std::chrono::seconds(1));
    if (logprobs) tokens.insert(tokens.end(), u.tokens.begin(), u.tokens.end());
    if (u.done) {
      result = std::move(*u.done);
      break;
    }
  }
  note_result(current_request(), result);
  if (!succeeded(result)) throw failure(result);
  const ResponseJson lp =
      logprobs ? logprobs_json(meta.endpoint, ctx.model.tokenizer(), tokens) : ResponseJson(nullptr);
  res.set_content(dump_json(completion_response(meta, result, lp)), "application/json");
}

// One streamed response; it lives as long as cpp-httplib's content provider.
struct Stream {
  Stream(ServeContext& c, std::shared_ptr<InFlightGuard> g, std::shared_ptr<CompletionChannel> ch,
         model::Engine::RequestId i, StreamEncoder e)
      : ctx(c), guard(std::move(g)), channel(std::move(ch)), id(i), encoder(std::move(e)) {}
  // A response dropped before it was sent (the connection failed) ends its request too.
  ~Stream() {
    if (!ended) cancel();
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  void cancel() {
    channel->abandon();
    ctx.engine.cancel(id);
    ended = true;
  }

  // Sends every event of the request, then ends the response; false when
  // the client stopped taking them (the request is cancelled then).
  bool run(httplib::DataSink& sink) {
    RequestRecord& rec = current_request();
    const auto send = [&sink](std::string_view bytes) { return bytes.empty() || sink.write(bytes.data(), bytes.size()); };
    bool ok = send(encoder.start());
    while (ok) {
      CompletionChannel::Update u = channel->wait(kKeepAliveInterval);
      if (u.tokens.empty() && !u.done) {
        ok = send(kKeepAlive);
        continue;
      }
      ok = send(encoder.tokens(u.tokens));
      if (ok && u.done) {
        note_result(rec, *u.done);
        ok = send(succeeded(*u.done) ? encoder.finish(*u.done) : encoder.error(failure(*u.done)));
        if (ok) {
          sink.done();
          ended = true;
          return true;
        }
      }
    }
    cancel();
    rec.finish = "disconnected";
    return false;
  }

  ServeContext& ctx;
  std::shared_ptr<InFlightGuard> guard;  // counted until the stream has ended
  std::shared_ptr<CompletionChannel> channel;
  model::Engine::RequestId id;
  StreamEncoder encoder;
  bool ended = false;
};

}  // namespace

void handle_completion(ServeContext& ctx, Endpoint endpoint, const httplib::Request& req, httplib::Response& res) {
  // Counted before the draining check, so that shutdown either waits for
  // this request or the request sees the shutdown.
  auto guard = std::make_shared<InFlightGuard>(ctx.in_flight);
  if (ctx.draining.load()) throw shutting_down();
  const nlohmann::json body = parse_json_body(req.body);
  ParsedRequest parsed = parse_completion_request(body, endpoint, ctx.options.defaults, ctx.random.next());
  if (!parsed.model.empty() && parsed.model != ctx.options.model_name)
    throw ApiError(404, "The model `" + parsed.model + "` does not exist.", "invalid_request_error", "model",
                   "model_not_found");
  parsed.completion.prompt_ids = prompt_ids(ctx, parsed);

  RequestRecord& rec = current_request();
  rec.completion = true;
  rec.stream = parsed.stream;
  rec.prompt_tokens = static_cast<uint32_t>(parsed.completion.prompt_ids.size());

  auto channel = std::make_shared<CompletionChannel>(ctx.metrics, endpoint_label(endpoint), rec.start);
  model::Engine::RequestId id = 0;
  try {
    id = ctx.engine.submit(std::move(parsed.completion), channel->callbacks());
  } catch (const std::invalid_argument& e) {
    throw bad_request(e.what());
  }
  if (id == 0) {
    if (ctx.draining.load()) throw shutting_down();
    ctx.metrics.count_rejected();
    throw ApiError(429, "The server is busy: every sequence slot is taken and the queue is full. Try again later.",
                   "rate_limit_error", {}, "queue_full");
  }

  ResponseMeta meta{endpoint, make_response_id(endpoint, ctx.random.next()), unix_now(), ctx.options.model_name,
                    ctx.options.system_fingerprint};
  if (!parsed.stream) {
    answer_when_done(ctx, meta, parsed.logprobs, *channel, res);
    return;
  }
  auto stream = std::make_shared<Stream>(ctx, std::move(guard), std::move(channel), id,
                                         StreamEncoder(std::move(meta), parsed.include_usage,
                                                       parsed.logprobs ? &ctx.model.tokenizer() : nullptr));
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider("text/event-stream",
                                   [stream](std::size_t, httplib::DataSink& sink) { return stream->run(sink); });
}

}  // namespace lamina::serve
