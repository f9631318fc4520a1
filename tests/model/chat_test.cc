// Chat formatting against the renderings transformers made from real-style
// templates (testdata/hf/*/chat-renderings.json), and the sampler's chain.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "lamina/model/chat.h"
#include "lamina/model/sampler.h"

namespace lamina::model {
namespace {

namespace fs = std::filesystem;
const fs::path kHf = fs::path(LAMINA_TESTDATA_DIR) / "hf";

class ChatRendering : public ::testing::TestWithParam<std::string> {};

TEST_P(ChatRendering, MatchesTransformers) {
  const fs::path dir = kHf / GetParam();
  if (!fs::exists(dir / "chat-renderings.json")) GTEST_SKIP() << "test data not found at " << dir;
  std::ifstream in(dir / "chat-renderings.json");
  const auto doc = nlohmann::json::parse(in);
  std::ifstream cfg_in(dir / "tokenizer_config.json");
  const auto cfg = nlohmann::json::parse(cfg_in);
  const auto special = [&](const char* key) -> std::string {
    if (!cfg.contains(key) || cfg[key].is_null()) return {};
    return cfg[key].is_string() ? cfg[key].get<std::string>() : cfg[key]["content"].get<std::string>();
  };
  const auto format = detect_chat_format(doc["chat_template"].get<std::string>());
  ASSERT_TRUE(format.has_value()) << "template family not recognised";

  std::map<std::string, std::vector<ChatMessage>> conversations;
  for (const auto& c : doc["conversations"]) {
    std::vector<ChatMessage> messages;
    for (const auto& m : c["messages"]) messages.push_back({m["role"], m["content"]});
    conversations[c["name"]] = messages;
  }
  int checked = 0;
  for (const auto& r : doc["renderings"]) {
    const auto& messages = conversations.at(r["conversation"]);
    const bool thinking = !(r.contains("extra_kwargs") && r["extra_kwargs"].value("enable_thinking", true) == false);
    const std::string text = render_chat(*format, messages, r["add_generation_prompt"], special("bos_token"),
                                         special("eos_token"), thinking);
    EXPECT_EQ(text, r["text"].get<std::string>())
        << r["conversation"] << " add_generation_prompt=" << r["add_generation_prompt"];
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

INSTANTIATE_TEST_SUITE_P(Hf, ChatRendering,
                         ::testing::Values("llama", "llama-spm", "qwen2", "qwen3", "phi3", "gemma2", "mistral"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& ch : n) ch = ch == '-' ? '_' : ch;
                           return n;
                         });

TEST(ChatFormat, UnknownTemplateAndAlternation) {
  EXPECT_FALSE(detect_chat_format("{{ messages }}").has_value());
  const auto f = chat_format_by_name("llama2");
  ASSERT_TRUE(f.has_value());
  EXPECT_THROW(render_chat(*f, {{"user", "a"}, {"user", "b"}}, true, "<s>", "</s>"), std::invalid_argument);
}

TEST(Sampler, GreedyPicksLowestIdOnTies) {
  Sampler s({.temperature = 0.0f});
  std::vector<float> logits{1.0f, 3.0f, 3.0f, -2.0f};
  EXPECT_EQ(s.sample(logits), 1);
}

TEST(Sampler, TopKOneIsGreedyAtAnyTemperature) {
  Sampler s({.temperature = 5.0f, .top_k = 1, .top_p = 1.0f, .min_p = 0.0f, .seed = 7});
  for (int i = 0; i < 20; ++i) {
    std::vector<float> logits{0.5f, 0.1f, 0.7f, 0.69f};
    EXPECT_EQ(s.sample(logits), 2);
  }
}

TEST(Sampler, DistributionFollowsSoftmax) {
  // Two tokens with logits differing by ln 3: picked 3:1 at temperature 1.
  Sampler s({.temperature = 1.0f, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f, .seed = 3});
  int first = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    std::vector<float> logits{std::log(3.0f), 0.0f};
    first += s.sample(logits) == 0;
  }
  EXPECT_NEAR(static_cast<double>(first) / n, 0.75, 0.015);
}

TEST(Sampler, TopPAndMinPCutTheTail) {
  Sampler top_p({.temperature = 1.0f, .top_k = 0, .top_p = 0.5f, .min_p = 0.0f, .seed = 1});
  Sampler min_p({.temperature = 1.0f, .top_k = 0, .top_p = 1.0f, .min_p = 0.5f, .seed = 1});
  for (int i = 0; i < 200; ++i) {
    std::vector<float> a{2.0f, 0.0f, 0.0f, 0.0f};  // p0 ~ 0.71 covers top-p 0.5 alone
    EXPECT_EQ(top_p.sample(a), 0);
    std::vector<float> b{2.0f, 1.9f, 0.0f, -1.0f};  // only ids 0 and 1 are within half of p0
    EXPECT_LE(min_p.sample(b), 1);
  }
}

TEST(Sampler, RepeatPenaltyUsesRecentWindow) {
  Sampler s({.temperature = 0.0f, .repeat_penalty = 2.0f, .repeat_last_n = 2});
  s.accept(0);
  s.accept(5);
  s.accept(6);  // 0 has left the window of 2
  std::vector<float> logits{4.0f, 0, 0, 0, 0, 3.0f, 3.9f};
  EXPECT_EQ(s.sample(logits), 0);
  EXPECT_FLOAT_EQ(logits[5], 1.5f);
  EXPECT_FLOAT_EQ(logits[6], 1.95f);
}

TEST(Sampler, SameSeedSameChoices) {
  SamplerOptions o{.temperature = 0.9f, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f, .seed = 99};
  Sampler a(o), b(o);
  for (int i = 0; i < 100; ++i) {
    std::vector<float> la{0.1f, 0.2f, 0.3f, 0.4f, 0.5f}, lb = la;
    ASSERT_EQ(a.sample(la), b.sample(lb));
  }
}

}  // namespace
}  // namespace lamina::model
