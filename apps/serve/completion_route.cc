// POST /v1/chat/completions and /v1/completions: validate, render, tokenize
// and queue on the engine, then answer once the request ends or stream its
// tokens as Server-Sent Events.
#include <chrono>
#include <memory>
#include <stdexcept>

#include "api_error.h"
#include "completion_channel.h"
#include "json_body.h"
#include "openai_response.h"
#include "routes.h"
#include "tool_response.h"

namespace lamina::serve {
namespace {

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

ApiError context_exceeded(uint32_t n_ctx, const char* param, const std::string& how_many) {
  return bad_request("This model's maximum context length is " + std::to_string(n_ctx) + " tokens. However, your " +
                         (std::string_view(param) == "messages" ? "messages" : "prompt") + " resulted in " +
                         how_many + " tokens. Please reduce the length of the " + param + ".",
                     param, "context_length_exceeded");
}

// Text is tokenized only when it could fit the context: a longer one costs
// nothing but its length check.
void check_prompt_bytes(const ServeContext& ctx, std::size_t bytes, const char* param) {
  if (bytes > ctx.max_prompt_bytes)
    throw context_exceeded(ctx.engine.n_ctx(), param, "more than " + std::to_string(ctx.engine.n_ctx()));
}

std::vector<int32_t> prompt_ids(const ServeContext& ctx, const ParsedRequest& r) {
  const model::Tokenizer& tok = ctx.model.tokenizer();
  const bool chat = r.endpoint == Endpoint::ChatCompletions;
  const char* param = chat ? "messages" : "prompt";
  std::vector<int32_t> ids;
  if (chat) {
    std::string rendered;
    try {
      rendered = ctx.chat.render(r.messages, r.chat);
    } catch (const std::invalid_argument& e) {
      throw bad_request(std::string("The chat template cannot render these messages: ") + e.what(), param);
    }
    check_prompt_bytes(ctx, rendered.size(), param);
    ids = ctx.chat.encode(rendered);
  } else if (r.prompt.is_ids) {
    for (const int32_t id : r.prompt.ids) {
      if (id >= tok.n_vocab())
        throw bad_request("Invalid value for 'prompt': token id " + std::to_string(id) +
                              " is outside the vocabulary (" + std::to_string(tok.n_vocab()) + " tokens).",
                          param, "invalid_value");
    }
    ids = r.prompt.ids;
  } else {
    check_prompt_bytes(ctx, r.prompt.text.size(), param);
    ids = tok.encode(r.prompt.text, /*add_special=*/true, /*parse_special=*/true);
  }
  if (ids.empty()) throw bad_request("The prompt is empty.", param, "invalid_value");
  if (ids.size() >= ctx.engine.n_ctx()) throw context_exceeded(ctx.engine.n_ctx(), param, std::to_string(ids.size()));
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
  return r.finish != model::FinishReason::Cancelled && r.finish != model::FinishReason::Error;
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

}  // namespace

struct RunningCompletion::State {
  State(ServeContext& c, RequestRecord& r) : ctx(c), guard(c.in_flight), record(r) {}

  ServeContext& ctx;
  // Counted before the draining check, so that shutdown either waits for
  // this request or the request sees the shutdown.
  InFlightGuard guard;
  RequestRecord& record;
  std::shared_ptr<CompletionChannel> channel;
  model::Engine::RequestId id = 0;
  ResponseMeta meta;
  bool logprobs = false;
  std::optional<StreamEncoder> encoder;   // when streamed
  std::optional<ToolCallReply> tools;     // when tools were offered: the output is split into calls
  std::vector<model::TokenEvent> tokens;  // not streamed: kept for the log-probabilities
  bool stream_started = false;
  bool ended = false;
};

RunningCompletion::RunningCompletion(std::unique_ptr<State> state) : state_(std::move(state)) {}

RunningCompletion::~RunningCompletion() {
  if (state_ && !state_->ended) cancel();
}

std::unique_ptr<RunningCompletion> RunningCompletion::start(ServeContext& ctx, Endpoint endpoint,
                                                            std::string_view body, RequestRecord& record,
                                                            std::function<void()> notify) {
  auto state = std::make_unique<State>(ctx, record);
  if (ctx.draining.load()) throw shutting_down();
  const nlohmann::json request_body = parse_json_body(body);
  ParsedRequest parsed = parse_completion_request(request_body, endpoint, ctx.options.defaults, ctx.random.next());
  parsed.grammar = parse_output_grammar(request_body, body);
  if (!parsed.model.empty() && parsed.model != ctx.options.model_name)
    throw ApiError(404, "The model `" + parsed.model + "` does not exist.", "invalid_request_error", "model",
                   "model_not_found");
  if (endpoint == Endpoint::ChatCompletions) constrain_tool_choice(parsed.tools, ctx.tool_format, parsed.completion);
  parsed.completion.prompt_ids = prompt_ids(ctx, parsed);
  if (parsed.grammar) parsed.completion.constraint = ctx.grammar_vocabulary.constraint(parsed.grammar);

  record.completion = true;
  record.stream = parsed.stream;
  record.prompt_tokens = static_cast<uint32_t>(parsed.completion.prompt_ids.size());

  state->channel =
      std::make_shared<CompletionChannel>(ctx.metrics, endpoint_label(endpoint), record.start, std::move(notify));
  try {
    state->id = ctx.engine.submit(std::move(parsed.completion), state->channel->callbacks());
  } catch (const std::invalid_argument& e) {
    throw bad_request(e.what());
  }
  if (state->id == 0) {
    if (ctx.draining.load()) throw shutting_down();
    ctx.metrics.count_rejected();
    throw ApiError(429, "The server is busy: every sequence slot is taken and the queue is full. Try again later.",
                   "rate_limit_error", {}, "queue_full");
  }
  state->meta = ResponseMeta{endpoint, make_response_id(endpoint, ctx.random.next()), unix_now(),
                             ctx.options.model_name, ctx.options.system_fingerprint};
  state->logprobs = parsed.logprobs;
  if (parsed.tools.offered()) state->tools.emplace(*ctx.tool_format, parsed.tools.parallel, ctx.random.next());
  if (parsed.stream)
    state->encoder.emplace(state->meta, parsed.include_usage, parsed.logprobs ? &ctx.model.tokenizer() : nullptr);
  return std::unique_ptr<RunningCompletion>(new RunningCompletion(std::move(state)));
}

bool RunningCompletion::streamed() const { return state_->encoder.has_value(); }

bool RunningCompletion::ended() const { return state_->ended; }

std::optional<Reply> RunningCompletion::reply() {
  State& s = *state_;
  CompletionChannel::Update u = s.channel->take();
  if (s.logprobs) s.tokens.insert(s.tokens.end(), u.tokens.begin(), u.tokens.end());
  if (!u.done) return std::nullopt;
  s.ended = true;
  note_result(s.record, *u.done);
  if (!succeeded(*u.done)) {
    s.record.error = failure(*u.done);
    return error_reply(*s.record.error);
  }
  const ResponseJson lp =
      s.logprobs ? logprobs_json(s.meta.endpoint, s.ctx.model.tokenizer(), s.tokens) : ResponseJson(nullptr);
  ResponseJson response = completion_response(s.meta, *u.done, lp);
  if (s.tools) s.tools->shape(response, *u.done);
  Reply r;
  r.body = dump_json(response);
  return r;
}

std::string RunningCompletion::events(bool& ended) {
  State& s = *state_;
  std::string out;
  if (!s.stream_started) {
    out = s.encoder->start();
    s.stream_started = true;
  }
  CompletionChannel::Update u = s.channel->take();
  out += s.tools ? s.tools->tokens(*s.encoder, u.tokens) : s.encoder->tokens(u.tokens);
  if (u.done) {
    s.ended = true;
    note_result(s.record, *u.done);
    if (!succeeded(*u.done)) out += s.encoder->error(failure(*u.done));
    else out += s.tools ? s.tools->finish(*s.encoder, *u.done) : s.encoder->finish(*u.done);
  }
  ended = s.ended;
  return out;
}

void RunningCompletion::cancel() {
  State& s = *state_;
  s.channel->abandon();
  s.ctx.engine.cancel(s.id);
  s.ended = true;
}

}  // namespace lamina::serve
