// The sampler's logit_bias: added before greedy and before the temperature
// chain; +100 forces a token, -100 forbids it.
#include <gtest/gtest.h>

#include <vector>

#include "lamina/model/sampler.h"

namespace lamina::model {
namespace {

std::vector<float> spread_logits() { return {5.0f, 1.0f, -3.0f, 4.5f, 0.0f, 2.0f}; }

TEST(LogitBias, PlusHundredForcesTheTokenGreedyAndSampled) {
  for (float temperature : {0.0f, 0.7f, 1.5f}) {
    Sampler s({.temperature = temperature, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f, .seed = 11,
               .logit_bias = {{2, 100.0f}}});
    for (int i = 0; i < 200; ++i) {
      std::vector<float> logits = spread_logits();
      ASSERT_EQ(s.sample(logits), 2) << "temperature " << temperature;
    }
  }
}

TEST(LogitBias, MinusHundredForbidsTheToken) {
  for (float temperature : {0.0f, 1.0f, 2.0f}) {
    Sampler s({.temperature = temperature, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f, .seed = 5,
               .logit_bias = {{0, -100.0f}, {3, -100.0f}}});
    for (int i = 0; i < 500; ++i) {
      std::vector<float> logits = spread_logits();
      const int32_t id = s.sample(logits);
      ASSERT_NE(id, 0);
      ASSERT_NE(id, 3);
    }
  }
}

TEST(LogitBias, ShiftsTheLogitsTheOthersSee) {
  // A bias of ln 3 between two equal logits: picked 3:1 at temperature 1.
  Sampler s({.temperature = 1.0f, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f, .seed = 9,
             .logit_bias = {{1, 1.0986123f}}});
  int second = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    std::vector<float> logits{0.0f, 0.0f};
    second += s.sample(logits) == 1;
  }
  EXPECT_NEAR(static_cast<double>(second) / n, 0.75, 0.015);
  std::vector<float> logits{0.5f, 0.25f};
  Sampler greedy({.temperature = 0.0f, .logit_bias = {{1, 0.5f}}});
  EXPECT_EQ(greedy.sample(logits), 1);
  EXPECT_FLOAT_EQ(logits[1], 0.75f);  // the caller's log-probabilities see the biased row
}

TEST(LogitBias, GreedyWithABiasIsNotThePlainArgmax) {
  EXPECT_TRUE(Sampler({.temperature = 0.0f}).picks_argmax());
  EXPECT_FALSE(Sampler({.temperature = 0.0f, .logit_bias = {{0, 1.0f}}}).picks_argmax());
}

}  // namespace
}  // namespace lamina::model
