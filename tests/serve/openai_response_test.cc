// The JSON shapes of responses, chunks and errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "lamina/gguf/file.h"
#include "openai_response.h"
#include "sse_events.h"

namespace lamina::serve {
namespace {

using json = nlohmann::json;

ResponseMeta meta(Endpoint endpoint) {
  ResponseMeta m;
  m.endpoint = endpoint;
  m.id = endpoint == Endpoint::ChatCompletions ? "chatcmpl-x" : "cmpl-x";
  m.created = 1700000000;
  m.model = "stories260K";
  m.system_fingerprint = "lamina-test";
  return m;
}

model::CompletionResult result(model::FinishReason finish, std::string text, std::vector<int32_t> ids) {
  model::CompletionResult r;
  r.finish = finish;
  r.text = std::move(text);
  r.generated_ids = std::move(ids);
  r.prompt_tokens = 5;
  r.cached_prompt_tokens = 2;
  return r;
}

model::TokenEvent token(int32_t id, std::string text) {
  model::TokenEvent e;
  e.id = id;
  e.text = std::move(text);
  e.chosen = {id, -0.5f};
  return e;
}

// Order-insensitive, for comparing with expected documents.
json plain(const ResponseJson& value) { return json::parse(dump_json(value)); }

using sse_testing::events;

const model::Tokenizer& stories_tokenizer() {
  static const model::Tokenizer tokenizer = model::Tokenizer::from_gguf(gguf::GgufFile::open(LAMINA_STORIES_MODEL));
  return tokenizer;
}

TEST(OpenAiResponse, IdsHaveOpenAiPrefixesAndVary) {
  const std::string chat = make_response_id(Endpoint::ChatCompletions, 1);
  const std::string text = make_response_id(Endpoint::Completions, 1);
  EXPECT_EQ(chat.rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(text.rfind("cmpl-", 0), 0u);
  EXPECT_EQ(chat.size(), 9u + 29u);
  EXPECT_EQ(chat.substr(9), text.substr(5));
  EXPECT_NE(make_response_id(Endpoint::ChatCompletions, 2), chat);
  for (const char c : chat.substr(9)) EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c))) << chat;
}

TEST(OpenAiResponse, ErrorShape) {
  EXPECT_EQ(plain(error_json(ApiError(400, "bad", "invalid_request_error", "temperature", "invalid_type"))),
            json::parse(R"({"error": {"message": "bad", "type": "invalid_request_error",
                                      "param": "temperature", "code": "invalid_type"}})"));
  EXPECT_EQ(plain(error_json(ApiError(500, "boom", "server_error"))),
            json::parse(R"({"error": {"message": "boom", "type": "server_error", "param": null, "code": null}})"));
}

TEST(OpenAiResponse, ChatCompletionShape) {
  const ResponseJson r = completion_response(meta(Endpoint::ChatCompletions),
                                             result(model::FinishReason::Length, "Once upon", {10, 11, 12}), nullptr);
  // Members in OpenAI's order.
  EXPECT_EQ(dump_json(r).substr(0, 74),
            R"({"id":"chatcmpl-x","object":"chat.completion","created":1700000000,"model")");
  EXPECT_EQ(plain(r), json::parse(R"({
    "id": "chatcmpl-x", "object": "chat.completion", "created": 1700000000, "model": "stories260K",
    "system_fingerprint": "lamina-test",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Once upon", "refusal": null},
                 "logprobs": null, "finish_reason": "length"}],
    "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8,
              "prompt_tokens_details": {"cached_tokens": 2}}})"));
}

TEST(OpenAiResponse, TextCompletionShape) {
  const ResponseJson r =
      completion_response(meta(Endpoint::Completions), result(model::FinishReason::StopString, "a time", {7}), nullptr);
  EXPECT_EQ(plain(r), json::parse(R"({
    "id": "cmpl-x", "object": "text_completion", "created": 1700000000, "model": "stories260K",
    "system_fingerprint": "lamina-test",
    "choices": [{"text": "a time", "index": 0, "logprobs": null, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6,
              "prompt_tokens_details": {"cached_tokens": 2}}})"));
}

TEST(OpenAiResponse, FinishReasons) {
  EXPECT_EQ(openai_finish_reason(model::FinishReason::EndOfGeneration), "stop");
  EXPECT_EQ(openai_finish_reason(model::FinishReason::StopString), "stop");
  EXPECT_EQ(openai_finish_reason(model::FinishReason::Length), "length");
  EXPECT_EQ(openai_finish_reason(model::FinishReason::ContextFull), "length");
}

TEST(OpenAiResponse, ChatStreamSequenceWithUsage) {
  StreamEncoder enc(meta(Endpoint::ChatCompletions), /*include_usage=*/true, nullptr);
  std::string sse = enc.start();
  const std::vector<model::TokenEvent> first = {token(10, "Once"), token(11, " up")};
  sse += enc.tokens(first);
  const std::vector<model::TokenEvent> held = {token(12, "")};
  EXPECT_EQ(enc.tokens(held), "");  // nothing to show yet
  sse += enc.finish(result(model::FinishReason::StopString, "Once up", {10, 11, 12}));
  const std::vector<json> e = events(sse);
  ASSERT_EQ(e.size(), 5u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(e[i]["id"], "chatcmpl-x");
    EXPECT_EQ(e[i]["object"], "chat.completion.chunk");
    EXPECT_EQ(e[i]["created"], 1700000000);
    EXPECT_EQ(e[i]["model"], "stories260K");
  }
  EXPECT_EQ(e[0]["choices"], json::parse(R"([{"index": 0, "delta": {"role": "assistant", "content": ""},
                                              "logprobs": null, "finish_reason": null}])"));
  EXPECT_TRUE(e[0]["usage"].is_null());
  EXPECT_EQ(e[1]["choices"], json::parse(R"([{"index": 0, "delta": {"content": "Once up"},
                                              "logprobs": null, "finish_reason": null}])"));
  EXPECT_EQ(e[2]["choices"],
            json::parse(R"([{"index": 0, "delta": {}, "logprobs": null, "finish_reason": "stop"}])"));
  EXPECT_EQ(e[3]["choices"], json::array());
  EXPECT_EQ(e[3]["usage"]["completion_tokens"], 3);
  EXPECT_EQ(e[3]["usage"]["total_tokens"], 8);
  EXPECT_EQ(e[4], "[DONE]");
}

TEST(OpenAiResponse, CompletionStreamWithoutUsage) {
  StreamEncoder enc(meta(Endpoint::Completions), /*include_usage=*/false, nullptr);
  EXPECT_EQ(enc.start(), "");  // the legacy endpoint has no role chunk
  const std::vector<model::TokenEvent> t = {token(3, "abc")};
  std::string sse = enc.tokens(t);
  sse += enc.finish(result(model::FinishReason::Length, "abc", {3}));
  const std::vector<json> e = events(sse);
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0]["object"], "text_completion");
  EXPECT_FALSE(e[0].contains("usage"));
  EXPECT_EQ(e[0]["choices"],
            json::parse(R"([{"text": "abc", "index": 0, "logprobs": null, "finish_reason": null}])"));
  EXPECT_EQ(e[1]["choices"],
            json::parse(R"([{"text": "", "index": 0, "logprobs": null, "finish_reason": "length"}])"));
  EXPECT_EQ(e[2], "[DONE]");
}

TEST(OpenAiResponse, StreamCarriesHeldBackTextBeforeTheFinishChunk) {
  // "Once up" was streamed; " to" was held back (it could have begun a stop
  // string) when an end-of-generation token ended the request.
  StreamEncoder enc(meta(Endpoint::ChatCompletions), /*include_usage=*/false, nullptr);
  std::string sse = enc.start();
  const std::vector<model::TokenEvent> t = {token(10, "Once up")};
  sse += enc.tokens(t);
  model::CompletionResult r = result(model::FinishReason::StopString, "Once up to", {10, 11});
  r.text_tail = " to";
  sse += enc.finish(r);
  const std::vector<json> e = events(sse);
  ASSERT_EQ(e.size(), 5u);
  EXPECT_EQ(e[2]["choices"][0]["delta"], json::parse(R"({"content": " to"})"));
  EXPECT_EQ(e[2]["choices"][0]["finish_reason"], nullptr);
  EXPECT_EQ(e[3]["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(e[4], "[DONE]");

  StreamEncoder legacy(meta(Endpoint::Completions), false, nullptr);
  const std::vector<json> l = events(legacy.finish(r));
  ASSERT_EQ(l.size(), 3u);
  EXPECT_EQ(l[0]["choices"][0]["text"], " to");
  EXPECT_EQ(l[1]["choices"][0]["finish_reason"], "stop");
}

TEST(OpenAiResponse, StreamErrorEndsWithDone) {
  StreamEncoder enc(meta(Endpoint::ChatCompletions), false, nullptr);
  const std::vector<json> e = events(enc.error(ApiError(503, "shutting down", "server_error")));
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0]["error"]["message"], "shutting down");
  EXPECT_EQ(e[1], "[DONE]");
}

TEST(OpenAiResponse, InvalidUtf8IsReplacedNotThrown) {
  const std::string out = dump_json(json{{"content", std::string("ok\xff\xc3")}});
  EXPECT_EQ(json::parse(out)["content"], "ok\xef\xbf\xbd\xef\xbf\xbd");
}

TEST(OpenAiResponse, ChatLogprobs) {
  const model::Tokenizer& tok = stories_tokenizer();
  const int32_t once = tok.encode("Once", false, false).at(0);
  const int32_t the = tok.encode("The", false, false).at(0);
  model::TokenEvent e = token(once, tok.token_to_piece(once));
  e.chosen.logprob = -0.25f;
  e.top = {{once, -0.25f}, {the, -2.0f}};
  const std::vector<model::TokenEvent> tokens = {e};
  const json lp = plain(logprobs_json(Endpoint::ChatCompletions, tok, tokens));
  const std::string piece = tok.token_to_piece(once);
  json bytes = json::array();
  for (const char c : piece) bytes.push_back(static_cast<unsigned char>(c));
  ASSERT_EQ(lp["content"].size(), 1u);
  EXPECT_EQ(lp["content"][0]["token"], piece);
  EXPECT_FLOAT_EQ(lp["content"][0]["logprob"].get<float>(), -0.25f);
  EXPECT_EQ(lp["content"][0]["bytes"], bytes);
  ASSERT_EQ(lp["content"][0]["top_logprobs"].size(), 2u);
  EXPECT_EQ(lp["content"][0]["top_logprobs"][1]["token"], tok.token_to_piece(the));
  EXPECT_FLOAT_EQ(lp["content"][0]["top_logprobs"][1]["logprob"].get<float>(), -2.0f);
  EXPECT_TRUE(lp["refusal"].is_null());
}

TEST(OpenAiResponse, CompletionLogprobsCarryTextOffsets) {
  const model::Tokenizer& tok = stories_tokenizer();
  const std::vector<int32_t> ids = tok.encode("Once upon a time", false, false);
  ASSERT_GE(ids.size(), 2u);
  std::vector<model::TokenEvent> tokens;
  for (const int32_t id : ids) tokens.push_back(token(id, tok.token_to_piece(id)));
  tokens[1].chosen.logprob = -std::numeric_limits<float>::infinity();
  const json lp = plain(logprobs_json(Endpoint::Completions, tok, tokens, 100));
  ASSERT_EQ(lp["tokens"].size(), ids.size());
  std::size_t offset = 100;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(lp["tokens"][i], tok.token_to_piece(ids[i]));
    EXPECT_EQ(lp["text_offset"][i], offset);
    offset += tok.token_to_piece(ids[i]).size();
  }
  EXPECT_EQ(lp["token_logprobs"][1], -9999.0);  // -inf cannot be JSON
  EXPECT_TRUE(lp["top_logprobs"][0].is_object());
}

TEST(OpenAiResponse, StreamedLogprobsFollowTheTokens) {
  const model::Tokenizer& tok = stories_tokenizer();
  StreamEncoder enc(meta(Endpoint::ChatCompletions), false, &tok);
  const std::vector<model::TokenEvent> held = {token(100, "")};
  // A token whose text is held back still reports its log-probability.
  const std::vector<json> e = events(enc.tokens(held));
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0]["choices"][0]["delta"]["content"], "");
  EXPECT_EQ(e[0]["choices"][0]["logprobs"]["content"].size(), 1u);
}

TEST(OpenAiResponse, ChoicesAreIndexedAndUsageCountsThePromptOnce) {
  const std::vector<model::CompletionResult> results = {result(model::FinishReason::Length, "ab", {1, 2}),
                                                        result(model::FinishReason::EndOfGeneration, "c", {3})};
  const std::vector<ResponseJson> logprobs(2, ResponseJson(nullptr));
  const json r = plain(completion_response(meta(Endpoint::Completions), results, logprobs));
  ASSERT_EQ(r["choices"].size(), 2u);
  EXPECT_EQ(r["choices"][1]["index"], 1);
  EXPECT_EQ(r["choices"][1]["text"], "c");
  EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(r["choices"][1]["finish_reason"], "stop");
  EXPECT_EQ(r["usage"], json::parse(R"({"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8,
                                        "prompt_tokens_details": {"cached_tokens": 2}})"));

  // Streamed: each choice's encoder tags its chunks; one close() ends the stream.
  StreamEncoder first(meta(Endpoint::ChatCompletions), true, nullptr, 0), second(meta(Endpoint::ChatCompletions), true,
                                                                                   nullptr, 1);
  std::string sse = first.start() + second.start();
  const std::vector<model::TokenEvent> tokens = {token(3, "c")};
  sse += second.tokens(tokens) + second.finish_choice(results[1]) + first.finish_choice(results[0]);
  sse += first.close(results);
  const std::vector<json> e = events(sse);
  ASSERT_EQ(e.size(), 7u);
  EXPECT_EQ(e[1]["choices"][0]["index"], 1);
  EXPECT_EQ(e[2]["choices"][0]["delta"]["content"], "c");
  EXPECT_EQ(e[2]["choices"][0]["index"], 1);
  EXPECT_EQ(e[3]["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(e[3]["choices"][0]["index"], 1);
  EXPECT_EQ(e[4]["choices"][0]["index"], 0);
  EXPECT_EQ(e[5]["usage"]["completion_tokens"], 3);
  EXPECT_EQ(e[5]["usage"]["prompt_tokens"], 5);
  EXPECT_EQ(e[6], "[DONE]");
}

}  // namespace
}  // namespace lamina::serve
