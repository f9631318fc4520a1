// POST /v1/chat/completions and /v1/completions: validate, render, tokenize
// and queue on the engine, then answer once the request ends or stream its
// tokens as Server-Sent Events.
#include <chrono>
#include <span>
#include <string>
#include <vector>
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

// The request's record from its choices: the prompt once, the completions summed,
// the first choice's finish and time to first token.
void note_result(RequestRecord& rec, std::span<const model::CompletionResult> choices) {
  const model::CompletionResult& r = choices.front();
  rec.prompt_tokens = r.prompt_tokens;
  rec.cached_tokens = r.cached_prompt_tokens;
  rec.generated_tokens = 0;
  for (const model::CompletionResult& c : choices) rec.generated_tokens += static_cast<uint32_t>(c.generated_ids.size());
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
  // One per choice (n of them): sample i of the prompt, seeded seed + i.
  struct Choice {
    std::shared_ptr<CompletionChannel> channel;
    model::Engine::RequestId id = 0;
    std::optional<StreamEncoder> encoder;   // when streamed
    std::optional<ToolCallReply> tools;     // when tools were offered: the output is split into calls
    std::vector<model::TokenEvent> tokens;  // not streamed: kept for the log-probabilities
    std::optional<model::CompletionResult> result;
  };
  std::vector<Choice> choices;
  ResponseMeta meta;
  bool logprobs = false;
  bool streamed = false;
  bool stream_started = false;
  bool ended = false;

  // Every choice's result once all have ended, the first failure else.
  bool all_done() const;
  std::optional<model::CompletionResult> first_failure() const;
  std::vector<model::CompletionResult> results() const;
};

bool RunningCompletion::State::all_done() const {
  for (const Choice& c : choices)
    if (!c.result) return false;
  return true;
}

std::optional<model::CompletionResult> RunningCompletion::State::first_failure() const {
  for (const Choice& c : choices)
    if (c.result && !succeeded(*c.result)) return c.result;
  return std::nullopt;
}

std::vector<model::CompletionResult> RunningCompletion::State::results() const {
  std::vector<model::CompletionResult> out;
  for (const Choice& c : choices) out.push_back(*c.result);
  return out;
}

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
  std::shared_ptr<const model::Grammar> tool_grammar;
  if (endpoint == Endpoint::ChatCompletions) {
    parsed.chat.tools_json = parsed.tools.tools_json = tools_in_client_order(parsed.tools, body);
    tool_grammar = constrain_tool_choice(parsed.tools, ctx.tool_format, parsed.completion);
    if (tool_grammar && parsed.grammar)
      throw bad_request("tool_choice 'required' or a named function cannot be combined with a response_format, "
                        "'json_schema' or 'grammar'.", "tool_choice", "invalid_value");
  }
  parsed.completion.prompt_ids = prompt_ids(ctx, parsed);
  const uint32_t n_slots = ctx.engine.stats().n_slots;
  if (parsed.n > n_slots)
    throw bad_request("Invalid value for 'n': " + std::to_string(parsed.n) + " choices, but this server runs at most " +
                          std::to_string(n_slots) + " sequences at once (--parallel).",
                      "n", "invalid_value");

  record.completion = true;
  record.stream = parsed.stream;
  record.prompt_tokens = static_cast<uint32_t>(parsed.completion.prompt_ids.size());

  // Submitted together, the choices share the prompt's computation (the
  // engine copies its positions from the first); the RunningCompletion owns
  // them from here, so a refusal below cancels those already queued.
  auto running = std::unique_ptr<RunningCompletion>(new RunningCompletion(std::move(state)));
  State& s = *running->state_;
  s.choices.resize(parsed.n);
  const uint64_t seed = parsed.completion.sampling.seed;
  for (uint32_t i = 0; i < parsed.n; ++i) {
    State::Choice& choice = s.choices[i];
    choice.channel = std::make_shared<CompletionChannel>(ctx.metrics, endpoint_label(endpoint), record.start, notify);
    model::CompletionRequest request = parsed.completion;
    request.sampling.seed = seed + i;
    // Each choice walks the grammar on its own.
    if (parsed.grammar) request.constraint = ctx.grammar_vocabulary.constraint(parsed.grammar);
    if (tool_grammar) request.constraint = ctx.grammar_vocabulary.tool_constraint(tool_grammar, *ctx.tool_format);
    if (parsed.tools.offered()) choice.tools.emplace(*ctx.tool_format, parsed.tools.parallel, ctx.random.next());
    try {
      choice.id = ctx.engine.submit(std::move(request), choice.channel->callbacks());
    } catch (const std::invalid_argument& e) {
      throw bad_request(e.what());
    }
    if (choice.id == 0) {
      if (ctx.draining.load()) throw shutting_down();
      ctx.metrics.count_rejected();
      throw ApiError(429, "The server is busy: every sequence slot is taken and the queue is full. Try again later.",
                     "rate_limit_error", {}, "queue_full");
    }
  }
  s.meta = ResponseMeta{endpoint, make_response_id(endpoint, ctx.random.next()), unix_now(), ctx.options.model_name,
                        ctx.options.system_fingerprint};
  s.logprobs = parsed.logprobs;
  s.streamed = parsed.stream;
  if (parsed.stream) {
    for (uint32_t i = 0; i < parsed.n; ++i)
      s.choices[i].encoder.emplace(s.meta, parsed.include_usage, parsed.logprobs ? &ctx.model.tokenizer() : nullptr,
                                   i);
  }
  return running;
}

bool RunningCompletion::streamed() const { return state_->streamed; }

bool RunningCompletion::ended() const { return state_->ended; }

std::optional<Reply> RunningCompletion::reply() {
  State& s = *state_;
  for (State::Choice& c : s.choices) {
    CompletionChannel::Update u = c.channel->take();
    if (s.logprobs) c.tokens.insert(c.tokens.end(), u.tokens.begin(), u.tokens.end());
    if (u.done) c.result = std::move(u.done);
  }
  const std::optional<model::CompletionResult> failed = s.first_failure();
  if (!failed && !s.all_done()) return std::nullopt;
  if (failed) {
    cancel();
    note_result(s.record, std::span(&*failed, 1));
    s.record.error = failure(*failed);
    return error_reply(*s.record.error);
  }
  s.ended = true;
  const std::vector<model::CompletionResult> results = s.results();
  note_result(s.record, results);
  std::vector<ResponseJson> logprobs;
  for (const State::Choice& c : s.choices)
    logprobs.push_back(s.logprobs ? logprobs_json(s.meta.endpoint, s.ctx.model.tokenizer(), c.tokens)
                                  : ResponseJson(nullptr));
  ResponseJson response = completion_response(s.meta, results, logprobs);
  for (std::size_t i = 0; i < s.choices.size(); ++i)
    if (s.choices[i].tools) s.choices[i].tools->shape(response["choices"][i], results[i]);
  Reply r;
  r.body = dump_json(response);
  return r;
}

std::string RunningCompletion::events(bool& ended) {
  State& s = *state_;
  std::string out;
  if (!s.stream_started) {
    for (State::Choice& c : s.choices) out += c.encoder->start();
    s.stream_started = true;
  }
  for (State::Choice& c : s.choices) {
    if (c.result) continue;
    CompletionChannel::Update u = c.channel->take();
    out += c.tools ? c.tools->tokens(*c.encoder, u.tokens) : c.encoder->tokens(u.tokens);
    if (!u.done) continue;
    c.result = std::move(u.done);
    if (succeeded(*c.result))
      out += c.tools ? c.tools->finish(*c.encoder, *c.result) : c.encoder->finish_choice(*c.result);
  }
  if (const std::optional<model::CompletionResult> failed = s.first_failure()) {
    cancel();
    note_result(s.record, std::span(&*failed, 1));
    out += s.choices.front().encoder->error(failure(*failed));
  } else if (s.all_done()) {
    s.ended = true;
    const std::vector<model::CompletionResult> results = s.results();
    note_result(s.record, results);
    out += s.choices.front().encoder->close(results);
  }
  ended = s.ended;
  return out;
}

void RunningCompletion::cancel() {
  State& s = *state_;
  for (State::Choice& c : s.choices) {
    if (!c.channel) continue;
    c.channel->abandon();
    if (c.id != 0) s.ctx.engine.cancel(c.id);
  }
  s.ended = true;
}

}  // namespace lamina::serve
