// Structured outputs end to end: JSON schemas and GBNF grammars constrain
// the test model's sampling (temperature 1, random seeds, many requests in
// one batch); every finished output parses and validates against its schema
// (by a validator that is not the grammar), every unfinished one is still a
// prefix the grammar allows, and a constrained request's tokens do not depend
// on what runs beside it.
#include "json_schema_validator.h"  // first: see there

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <regex>
#include <string>
#include <vector>

#include "engine_test_util.h"
#include "lamina/model/grammar.h"

namespace lamina::model {
namespace {

using engine_test::kModelPath;
using engine_test::shared_model;
using nlohmann::json;

const char* const kSchemas[] = {
    R"({"type":"object","properties":{"name":{"type":"string","maxLength":8},"age":{"type":"integer","minimum":0,"maximum":120}},"required":["name","age"],"additionalProperties":false})",
    R"({"type":"boolean"})",
    R"({"type":"integer"})",
    R"({"type":"number"})",
    R"({"type":"null"})",
    R"({"enum":["red","green","blue"]})",
    R"({"const":{"version":1}})",
    R"({"type":"string","maxLength":6})",
    R"({"type":"string","minLength":2,"maxLength":4})",
    R"({"type":"string","format":"date"})",
    R"({"type":"string","format":"date-time"})",
    R"({"type":"string","format":"uuid"})",
    R"({"type":"string","format":"email"})",
    R"({"type":"string","format":"time"})",
    R"({"type":"string","pattern":"^[A-Z]{2}-\\d{2,3}$"})",
    R"({"type":"string","pattern":"^(yes|no|maybe)!?$"})",
    R"({"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":3})",
    R"({"type":"array","items":{"type":"boolean"},"maxItems":0})",
    R"({"type":"array","items":{"enum":[1,2,3]},"minItems":2,"maxItems":4})",
    R"({"type":"array","items":{"type":"string","maxLength":3},"minItems":2,"maxItems":2})",
    R"({"type":["integer","null"]})",
    R"({"anyOf":[{"type":"boolean"},{"type":"string","maxLength":4},{"type":"integer","minimum":1}]})",
    R"({"oneOf":[{"type":"null"},{"type":"array","items":{"type":"null"},"minItems":1,"maxItems":2}]})",
    R"({"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"],"additionalProperties":false})",
    R"({"type":"object","properties":{"a":{"type":"boolean"},"b":{"type":"null"},"c":{"enum":[0,1]}},"additionalProperties":false})",
    R"({"type":"object","properties":{"point":{"type":"object","properties":{"x":{"type":"integer","minimum":-5,"maximum":5},"y":{"type":"integer","minimum":-5,"maximum":5}},"required":["x","y"],"additionalProperties":false}},"required":["point"],"additionalProperties":false})",
    R"({"type":"object","properties":{"tags":{"type":"array","items":{"enum":["a","b"]},"maxItems":3},"id":{"type":"string","format":"uuid"}},"required":["id","tags"]})",
    R"({"$defs":{"flag":{"type":"boolean"}},"type":"object","properties":{"f":{"$ref":"#/$defs/flag"},"g":{"$ref":"#/$defs/flag"}},"required":["f","g"],"additionalProperties":false})",
    R"({"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer","minimum":0,"maximum":9},"next":{"anyOf":[{"type":"null"},{"$ref":"#/$defs/node"}]}},"required":["v","next"],"additionalProperties":false}},"$ref":"#/$defs/node"})",
    R"({"definitions":{"color":{"enum":["red","blue"]}},"type":"array","items":{"$ref":"#/definitions/color"},"minItems":1,"maxItems":4})",
    R"({"type":"object","additionalProperties":{"type":"integer","minimum":0,"maximum":3}})",
    R"({"type":"object","properties":{},"additionalProperties":false})",
    R"({"type":"object","properties":{"when":{"type":"string","format":"date"},"kind":{"const":"event"},"count":{"type":"integer","exclusiveMinimum":0,"exclusiveMaximum":4}},"required":["when","kind","count"],"additionalProperties":false})",
    R"({"anyOf":[{"type":"object","properties":{"t":{"const":"a"},"n":{"type":"integer","minimum":0,"maximum":2}},"required":["t","n"],"additionalProperties":false},{"type":"object","properties":{"t":{"const":"b"},"s":{"type":"string","maxLength":3}},"required":["t","s"],"additionalProperties":false}]})",
    R"({"type":"array","items":{"type":"array","items":{"type":"integer","minimum":0,"maximum":1},"minItems":1,"maxItems":2},"minItems":1,"maxItems":2})",
    R"({"allOf":[{"type":"object","properties":{"q":{"type":"number"}},"required":["q"],"additionalProperties":false}]})",
    R"({"type":"string","pattern":"^\\w{1,3}\\.[a-c]+$"})",
};

// Every request in one engine of 8 slots, submitted at once.
std::vector<CompletionResult> run_all(const Model& model, const std::vector<CompletionRequest>& requests,
                                      uint32_t n_slots = 8) {
  EngineOptions options;
  options.max_queue = static_cast<uint32_t>(requests.size());
  return engine_test::run_all(model, n_slots, options, requests);
}

CompletionRequest constrained(const Model& model, std::shared_ptr<TokenConstraint> c, uint64_t seed) {
  return engine_test::full_distribution_request(model, "The answer as JSON:", 64, seed, std::move(c));
}

TEST(StructuredOutputTest, SampledJsonValidatesAgainstEverySchema) {
  LAMINA_REQUIRE_MODEL();
  const auto vocab = GrammarVocabulary::from_tokenizer(model.tokenizer());
  constexpr uint64_t kSeeds = 4;
  std::vector<CompletionRequest> requests;
  for (const char* schema : kSchemas) {
    auto c = std::make_shared<TokenConstraint>(Grammar::from_json_schema(schema), vocab);
    for (uint64_t seed = 0; seed < kSeeds; ++seed) requests.push_back(constrained(model, c, 100 + seed));
  }
  const auto results = run_all(model, requests);
  std::size_t finished = 0;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const char* schema = kSchemas[i / kSeeds];
    const CompletionResult& r = results[i];
    ASSERT_NE(r.finish, FinishReason::Error) << r.error;
    // Whatever came out is a prefix the grammar allows; along the way the
    // fast mask equals the token-by-token reference.
    GrammarMatcher m(requests[i].constraint);
    for (int32_t id : r.generated_ids) {
      ASSERT_EQ(m.allowed(), m.allowed_reference()) << schema << "\n" << r.text;
      ASSERT_TRUE(m.accept(id)) << schema << "\n" << r.text;
    }
    ASSERT_TRUE(GrammarMatcher(requests[i].constraint).accept_bytes(r.text)) << schema << "\n" << r.text;
    if (r.finish != FinishReason::EndOfGeneration) {
      EXPECT_EQ(r.finish, FinishReason::Length);
      continue;
    }
    ++finished;
    json value;
    ASSERT_NO_THROW(value = json::parse(r.text)) << schema << "\n" << r.text;
    EXPECT_EQ(schema_test::Validator(json::parse(schema)).check(value), "") << schema << "\n" << r.text;
  }
  // Most schemas are bounded enough that most samples end within the budget.
  EXPECT_GE(finished, results.size() / 2) << finished << " of " << results.size();
  // And every schema had at least one output checked whole.
  for (std::size_t k = 0; k < std::size(kSchemas); ++k) {
    std::size_t n = 0;
    for (uint64_t seed = 0; seed < kSeeds; ++seed) n += results[k * kSeeds + seed].finish == FinishReason::EndOfGeneration;
    EXPECT_GE(n, 1u) << kSchemas[k];
  }
}

TEST(StructuredOutputTest, SampledTextMatchesGbnfGrammars) {
  LAMINA_REQUIRE_MODEL();
  struct Case {
    const char* gbnf;
    const char* regex;  // the same language, as an ECMAScript regex
  };
  const Case cases[] = {
      {"root ::= (\"yes\" | \"no\") \"!\"?", "(yes|no)!?"},
      {"root ::= [a-z]{1,5} (\" \" [a-z]{1,5}){0,3} \".\"", "[a-z]{1,5}( [a-z]{1,5}){0,3}\\."},
      {"root ::= expr\nexpr ::= term ([+*] term){0,3}\nterm ::= [0-9]{1,2} | \"(\" expr \")\"", ""},
      {"root ::= \"Once\" [^.\\n]{0,12} \".\"", "Once[^.\\n]{0,12}\\."},
      {"root ::= item (\",\" item){1,2}\nitem ::= \"cat\" | \"dog\" | [0-9]", "(cat|dog|[0-9])(,(cat|dog|[0-9])){1,2}"},
  };
  const auto vocab = GrammarVocabulary::from_tokenizer(model.tokenizer());
  std::vector<CompletionRequest> requests;
  for (const Case& c : cases) {
    auto constraint = std::make_shared<TokenConstraint>(Grammar::from_gbnf(c.gbnf), vocab);
    for (uint64_t seed = 0; seed < 4; ++seed) requests.push_back(constrained(model, constraint, 7 + seed));
  }
  const auto results = run_all(model, requests);
  std::size_t finished = 0;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const Case& c = cases[i / 4];
    const CompletionResult& r = results[i];
    ASSERT_NE(r.finish, FinishReason::Error) << r.error;
    GrammarMatcher m(requests[i].constraint);
    ASSERT_TRUE(m.accept_bytes(r.text)) << c.gbnf << "\n" << r.text;
    if (r.finish != FinishReason::EndOfGeneration) continue;
    ++finished;
    EXPECT_TRUE(m.can_end()) << r.text;
    if (*c.regex) {
      EXPECT_TRUE(std::regex_match(r.text, std::regex(c.regex))) << c.gbnf << "\n" << r.text;
    }
  }
  EXPECT_GE(finished, results.size() / 2);
}

TEST(StructuredOutputTest, ConstrainedTokensDoNotDependOnTheBatch) {
  LAMINA_REQUIRE_MODEL();
  const auto vocab = GrammarVocabulary::from_tokenizer(model.tokenizer());
  auto c = std::make_shared<TokenConstraint>(Grammar::json_object(), vocab);
  const auto alone = run_all(model, {constrained(model, c, 5)});
  auto other = std::make_shared<TokenConstraint>(Grammar::from_json_schema(kSchemas[0]), vocab);
  const auto batch = run_all(model, {constrained(model, other, 1), constrained(model, c, 5),
                                      constrained(model, other, 2), constrained(model, c, 6)}, 4);
  EXPECT_EQ(alone[0].generated_ids, batch[1].generated_ids);
  EXPECT_FALSE(alone[0].generated_ids.empty());
}

}  // namespace
}  // namespace lamina::model

namespace lamina::model {
namespace {

TEST(StructuredOutputTest, TopLogprobsLeaveOutWhatTheGrammarRulesOut) {
  LAMINA_REQUIRE_MODEL();
  const auto vocab = GrammarVocabulary::from_tokenizer(model.tokenizer());
  CompletionRequest r = constrained(
      model, std::make_shared<TokenConstraint>(Grammar::from_gbnf("root ::= [ab]{4}"), vocab), 3);
  r.top_logprobs = kMaxTopLogprobs;
  engine_test::Collector collector;
  CpuForward forward(model, engine_test::forward_options(1));
  Engine engine(model, forward, EngineOptions{});
  ASSERT_NE(engine.submit(r, collector.callbacks()), 0u);
  const auto& events = collector.events();
  ASSERT_EQ(events.size(), 4u);
  for (const TokenEvent& e : events) {
    ASSERT_FALSE(e.top.empty());
    EXPECT_LT(e.top.size(), static_cast<std::size_t>(kMaxTopLogprobs));
    for (const TokenLogprob& t : e.top) {
      EXPECT_TRUE(std::isfinite(t.logprob)) << t.id;
      const std::string piece = model.tokenizer().token_to_piece(t.id);
      EXPECT_TRUE(piece.find_first_not_of("ab") == std::string::npos && !piece.empty()) << piece;
    }
  }
}

}  // namespace
}  // namespace lamina::model
