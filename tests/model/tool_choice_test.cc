// tool_choice "required" and named functions as constrained decoding: for
// each tool-call format, the test model sampled at temperature 1 under
// tool_call_grammar() writes only calls, which the format's own parser returns
// with the allowed names and arguments valid against each function's schema
// (checked by a validator that is not the grammar).
#include "json_schema_validator.h"  // first: see there

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <set>
#include <string>
#include <vector>

#include "engine_test_util.h"
#include "lamina/model/grammar.h"
#include "lamina/model/tool_calls.h"
#include "tokenizer_test_util.h"

namespace lamina::model {
namespace {

using engine_test::kModelPath;
using engine_test::shared_model;
using nlohmann::json;

const std::vector<ToolFunction> kFunctions = {
    {"get_weather",
     R"({"type":"object","properties":{"city":{"type":"string","maxLength":6},"unit":{"enum":["c","f"]}},"required":["city"],"additionalProperties":false})"},
    {"add",
     R"({"type":"object","properties":{"a":{"type":"integer","minimum":0,"maximum":9},"b":{"type":"integer","minimum":0,"maximum":9}},"required":["a","b"],"additionalProperties":false})"},
    {"now", ""},  // no parameters: any object
    {"tag", R"({"properties":{"t":{"$ref":"#/$defs/t"}},"required":["t"],"additionalProperties":false,"$defs":{"t":{"anyOf":[{"type":"boolean"},{"type":"null"}]}}})"},
};

const ToolCallFormat kFormats[] = {ToolCallFormat::Hermes, ToolCallFormat::Llama3Json, ToolCallFormat::Mistral,
                                   ToolCallFormat::Harmony};

struct Choice {
  std::vector<ToolFunction> functions;  // the allowed ones
  bool parallel;
};

CompletionRequest sampled(const Model& model, std::shared_ptr<TokenConstraint> c, uint64_t seed) {
  return engine_test::full_distribution_request(model, "Once upon a time", 128, seed, std::move(c));
}

TEST(ToolChoiceTest, SampledOutputsAreCallsOfTheAllowedFunctions) {
  LAMINA_REQUIRE_MODEL();
  const std::vector<Choice> choices = {
      {kFunctions, true},       // required, parallel calls allowed
      {kFunctions, false},      // required, one call
      {{kFunctions[0]}, true},  // a named function
      {{kFunctions[1]}, false},
  };
  constexpr uint64_t kSeeds = 6;
  struct Job {
    ToolCallFormat format;
    const Choice* choice;
  };
  std::vector<Job> jobs;
  std::vector<CompletionRequest> requests;
  for (ToolCallFormat format : kFormats) {
    const auto vocab = GrammarVocabulary::from_tokenizer(model.tokenizer(), tool_call_marker_tokens(format));
    for (const Choice& choice : choices) {
      auto c = std::make_shared<TokenConstraint>(tool_call_grammar(format, choice.functions, choice.parallel), vocab);
      for (uint64_t seed = 0; seed < kSeeds; ++seed) {
        requests.push_back(sampled(model, c, 1000 * jobs.size() + seed));
        jobs.push_back({format, &choice});
      }
    }
  }
  EngineOptions options;
  options.max_queue = static_cast<uint32_t>(requests.size());
  const auto results = engine_test::run_all(model, 8, options, requests);
  std::size_t finished = 0, calls = 0, multi = 0;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const Job& job = jobs[i];
    const CompletionResult& r = results[i];
    const std::string what = std::string(tool_call_format_name(job.format)) + "\n" + r.text;
    ASSERT_NE(r.finish, FinishReason::Error) << r.error;
    ASSERT_TRUE(GrammarMatcher(requests[i].constraint).accept_bytes(r.text)) << what;
    const ToolCallOutput out = parse_tool_calls(job.format, r.text);
    // Cut off by the budget, the last call may be unfinished; those before it are whole.
    const bool whole = r.finish == FinishReason::EndOfGeneration;
    if (whole) {
      ++finished;
      EXPECT_EQ(out.content, "") << what;
      ASSERT_GE(out.calls.size(), 1u) << what;
      if (!job.choice->parallel) {
        EXPECT_EQ(out.calls.size(), 1u) << what;
      }
    } else {
      EXPECT_EQ(r.finish, FinishReason::Length) << what;
    }
    const std::size_t n_whole = whole ? out.calls.size() : (out.calls.empty() ? 0 : out.calls.size() - 1);
    multi += n_whole > 1;
    for (std::size_t k = 0; k < n_whole; ++k) {
      const ToolCall& call = out.calls[k];
      ++calls;
      const ToolFunction* f = nullptr;
      for (const ToolFunction& allowed : job.choice->functions)
        if (allowed.name == call.name) f = &allowed;
      ASSERT_NE(f, nullptr) << "'" << call.name << "' is not allowed: " << what;
      json args;
      ASSERT_NO_THROW(args = json::parse(call.arguments)) << what;
      ASSERT_TRUE(args.is_object()) << what;
      if (!f->parameters.empty()) {
        EXPECT_EQ(schema_test::Validator(json::parse(f->parameters)).check(args), "") << what;
      }
    }
  }
  // The budget fits a call or more of every function: most samples end whole.
  EXPECT_GE(finished, results.size() / 2) << finished << " of " << results.size();
  EXPECT_GE(calls, finished);
  EXPECT_GT(multi, 0u) << "no sample made parallel calls";
}

TEST(ToolChoiceTest, GrammarsAcceptWhatTheParsersRead) {
  // Hand-written replies in each format: the grammar takes them, and the parser reads the calls back.
  const std::vector<ToolFunction> f = {kFunctions[0], kFunctions[1]};
  struct Case {
    ToolCallFormat format;
    const char* text;
    std::size_t n_calls;
  };
  const Case cases[] = {
      {ToolCallFormat::Hermes, "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call>", 1},
      {ToolCallFormat::Hermes,
       "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call>\n"
       "<tool_call>\n{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\"}}\n</tool_call>",
       2},
      {ToolCallFormat::Llama3Json,
       "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Rome\", \"unit\": \"c\"}}; "
       "{\"name\": \"add\", \"parameters\": {\"a\": 0, \"b\": 9}}",
       2},
      {ToolCallFormat::Mistral, "[TOOL_CALLS][{\"name\": \"add\", \"arguments\": {\"a\": 3, \"b\": 4}}]", 1},
      {ToolCallFormat::Mistral, "[TOOL_CALLS]add[ARGS]{\"a\": 3, \"b\": 4}[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Oslo\"}",
       2},
      {ToolCallFormat::Harmony, "<|channel|>commentary to=functions.add <|constrain|>json<|message|>{\"a\": 5, \"b\": 6}",
       1},
      {ToolCallFormat::Harmony, "<|channel|>commentary to=functions.get_weather<|message|>{\"city\": \"Lima\"}", 1},
  };
  for (const Case& c : cases) {
    const auto vocab = GrammarVocabulary::from_pieces({"x"}, {});
    GrammarMatcher m(std::make_shared<TokenConstraint>(tool_call_grammar(c.format, f, true), vocab));
    ASSERT_TRUE(m.accept_bytes(c.text)) << c.text;
    EXPECT_TRUE(m.can_end()) << c.text;
    EXPECT_EQ(parse_tool_calls(c.format, c.text).calls.size(), c.n_calls) << c.text;
    // Without parallel calls, the second call is refused.
    GrammarMatcher single(std::make_shared<TokenConstraint>(tool_call_grammar(c.format, f, false), vocab));
    EXPECT_EQ(single.accept_bytes(c.text), c.n_calls == 1) << c.text;
  }
  // A named function alone: the other one is refused.
  GrammarMatcher named(std::make_shared<TokenConstraint>(tool_call_grammar(ToolCallFormat::Hermes, {kFunctions[0]}, true),
                                                         GrammarVocabulary::from_pieces({"x"}, {})));
  EXPECT_FALSE(named.accept_bytes(cases[0].text));
}

TEST(ToolChoiceTest, BadSchemasAndFunctionsAreClearErrors) {
  auto message = [](const std::vector<ToolFunction>& f) {
    try {
      tool_call_grammar(ToolCallFormat::Hermes, f, true);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(message({{"f", R"({"type":"object","properties":{"x":{"type":"string","contentMediaType":"a/b"}}})"}})
                .find("function 'f'"),
            std::string::npos);
  EXPECT_NE(message({{"f", R"({"type":"object","properties":{"x":{"type":"string","contentMediaType":"a/b"}}})"}})
                .find("contentMediaType"),
            std::string::npos);
  EXPECT_NE(message({{"g", R"({"type":"string"})"}}).find("\"type\": \"object\""), std::string::npos);
  // function.strict: every object with properties must close them.
  const char* open_object = R"({"type":"object","properties":{"x":{"type":"integer"}}})";
  EXPECT_EQ(message({{"s", open_object, false}}), "");
  EXPECT_NE(message({{"s", open_object, true}}).find("additionalProperties"), std::string::npos);
  EXPECT_NE(message({{"g", "{not json"}}).find("not valid JSON"), std::string::npos);
  EXPECT_NE(message({}).find("at least one function"), std::string::npos);
  EXPECT_NE(message({{"", ""}}).find("no name"), std::string::npos);
}

TEST(ToolChoiceTest, MarkerTokensStandForTheirText) {
  const std::optional<Tokenizer> tok = test::tokenizer_from_testdata("vocab/ggml-vocab-phi-3.gguf");
  if (!tok) GTEST_SKIP() << "the phi-3 vocabulary is not in the test data";
  const int32_t marker = tok->find_token("<|assistant|>");
  ASSERT_GE(marker, 0);
  ASSERT_TRUE(tok->is_special(marker));
  const auto grammar = Grammar::from_gbnf("root ::= \"<|assistant|>\" [a-z]+");
  auto allowed = [&](const std::vector<std::string>& markers) {
    GrammarMatcher m(std::make_shared<TokenConstraint>(grammar, GrammarVocabulary::from_tokenizer(*tok, markers)));
    const auto bits = m.allowed();
    EXPECT_EQ(bits, m.allowed_reference());
    return (bits[static_cast<std::size_t>(marker) / 64] >> (marker % 64)) & 1u;
  };
  EXPECT_FALSE(allowed({}));  // a special token never matches grammar text unless admitted
  EXPECT_TRUE(allowed({"<|assistant|>"}));
}

}  // namespace
}  // namespace lamina::model
