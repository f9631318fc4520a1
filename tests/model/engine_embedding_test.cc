// Embeddings through the engine: the final hidden states pooled and
// normalised; an input's vector does not depend on the inputs beside it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <future>
#include <stdexcept>
#include <vector>

#include <unistd.h>

#include "engine_test_util.h"
#include "lamina/gguf/writer.h"
#include "lamina/model/embedding.h"

namespace lamina::model::engine_test {
namespace {

// A float vector of unit length computed in double and rounded once per
// component: |v|^2 is 1 within two roundings of 2^-24 relative.
constexpr double kUnitNormSlack = 4.0 / (1 << 24);

std::vector<int32_t> ids_of(const Model& model, const char* text) { return model.tokenizer().encode(text, true, false); }

EmbeddingResult embed_all(const Model& model, uint32_t n_slots, EmbeddingRequest request) {
  CpuForward forward(model, forward_options(n_slots));
  Engine engine(model, forward, {});
  std::promise<EmbeddingResult> done;
  EXPECT_TRUE(engine.embed(std::move(request), [&](EmbeddingResult r) { done.set_value(std::move(r)); }));
  EmbeddingResult r = done.get_future().get();
  EXPECT_EQ(r.error, "");
  return r;
}

double dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += static_cast<double>(a[i]) * b[i];
  return s;
}

TEST(EngineEmbedding, AloneAndInABatchGiveTheSameBits) {
  LAMINA_REQUIRE_MODEL();
  const std::vector<std::vector<int32_t>> inputs = {ids_of(model, "The cat sat on the mat."),
                                                    ids_of(model, "Once upon a time there was a big tree"),
                                                    ids_of(model, "The cat sat on the mat.")};
  for (const Pooling pooling : {Pooling::Last, Pooling::Mean}) {
    const EmbeddingResult batch = embed_all(model, 3, {inputs, pooling});
    ASSERT_EQ(batch.vectors.size(), 3u);
    // Two slots for three inputs: two rounds, and still the same bits.
    const EmbeddingResult rounds = embed_all(model, 2, {inputs, pooling});
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const EmbeddingResult alone = embed_all(model, 1, {{inputs[i]}, pooling});
      ASSERT_EQ(alone.vectors.size(), 1u);
      EXPECT_EQ(alone.vectors[0], batch.vectors[i]) << pooling_name(pooling) << " input " << i;
      EXPECT_EQ(rounds.vectors[i], batch.vectors[i]) << pooling_name(pooling) << " input " << i;
      ASSERT_EQ(batch.vectors[i].size(), model.config().n_embd);
      EXPECT_NEAR(dot(batch.vectors[i], batch.vectors[i]), 1.0, kUnitNormSlack);
    }
    EXPECT_EQ(batch.vectors[0], batch.vectors[2]);
    EXPECT_NEAR(dot(batch.vectors[0], batch.vectors[2]), 1.0, kUnitNormSlack);  // cosine of identical texts
    EXPECT_LT(dot(batch.vectors[0], batch.vectors[1]), 1.0 - 1e-3);
  }
}

TEST(EngineEmbedding, PoolingsFollowTheirDefinitionOnTheHiddenStates) {
  LAMINA_REQUIRE_MODEL();
  const std::vector<int32_t> ids = ids_of(model, "A little bird sang a song");
  // The reference: every position's final hidden state from the forward pass.
  CpuForward forward(model, forward_options(1));
  std::vector<TokenInput> batch;
  for (uint32_t pos = 0; pos < ids.size(); ++pos) batch.push_back({ids[pos], pos, 0, true});
  const std::span<const float> states = forward.hidden_states(batch);
  const std::size_t E = model.config().n_embd;
  ASSERT_EQ(states.size(), ids.size() * E);
  auto normalised = [&](std::vector<double> v) {
    double n2 = 0;
    for (double x : v) n2 += x * x;
    std::vector<float> out;
    for (double x : v) out.push_back(static_cast<float>(x / std::sqrt(n2)));
    return out;
  };
  std::vector<double> mean(E, 0.0), last(E, 0.0);
  for (std::size_t t = 0; t < ids.size(); ++t)
    for (std::size_t i = 0; i < E; ++i) mean[i] += states[t * E + i];
  for (double& x : mean) x /= static_cast<double>(ids.size());
  for (std::size_t i = 0; i < E; ++i) last[i] = states[(ids.size() - 1) * E + i];

  const std::vector<float> want_mean = normalised(mean), want_last = normalised(last);
  const std::vector<float> got_mean = embed_all(model, 1, {{ids}, Pooling::Mean}).vectors.at(0);
  const std::vector<float> got_last = embed_all(model, 1, {{ids}, Pooling::Last}).vectors.at(0);
  for (std::size_t i = 0; i < E; ++i) {
    // One rounding of a double apart at most (the sums may run in another order).
    EXPECT_NEAR(got_mean[i], want_mean[i], 2.0 * std::abs(want_mean[i]) / (1 << 23) + 1e-30) << i;
    EXPECT_NEAR(got_last[i], want_last[i], 2.0 * std::abs(want_last[i]) / (1 << 23) + 1e-30) << i;
  }
  EXPECT_LT(dot(got_mean, got_last), 1.0 - 1e-3);
}

TEST(EngineEmbedding, HiddenStatesLeaveTheCacheAsDecodeDoes) {
  LAMINA_REQUIRE_MODEL();
  // The prompt through hidden_states() in one forward pass and through
  // decode() in another: the next token's logits are the same bits.
  const std::vector<int32_t> ids = ids_of(model, "Once upon a time");
  std::vector<TokenInput> batch;
  for (uint32_t pos = 0; pos < ids.size(); ++pos) batch.push_back({ids[pos], pos, 0, pos + 1 == ids.size()});
  CpuForward a(model, forward_options(1)), b(model, forward_options(1));
  const std::span<const float> hidden = a.hidden_states(batch);
  ASSERT_EQ(hidden.size(), model.config().n_embd);
  const std::span<const float> prompt_logits = b.decode(batch);
  ASSERT_EQ(prompt_logits.size(), model.config().n_vocab);
  const TokenInput next{argmax(prompt_logits), static_cast<uint32_t>(ids.size()), 0, true};
  const std::span<const float> next_a = a.decode(std::span(&next, 1));
  const std::vector<float> la(next_a.begin(), next_a.end());
  const std::span<const float> lb = b.decode(std::span(&next, 1));
  EXPECT_TRUE(std::equal(la.begin(), la.end(), lb.begin(), lb.end()));
}

// The test model with `<arch>.pooling_type` set to `value` (of `type`).
std::unique_ptr<Model> with_pooling_type(const gguf::Value& value) {
  const gguf::GgufFile& file = shared_model()->file();
  gguf::GgufWriter writer;
  writer.copy_metadata_from(file);
  writer.set(file.get_string("general.architecture") + ".pooling_type", value);
  for (const gguf::TensorInfo& t : file.tensors()) writer.add_tensor_view(t.name, t.type, t.shape(), t.data);
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("lamina-pooling-" + std::to_string(getpid()) + ".gguf");
  writer.write_file(path);
  auto model = Model::load(path);
  std::filesystem::remove(path);
  return model;
}

TEST(EngineEmbedding, PoolingComesFromTheGgufKey) {
  LAMINA_REQUIRE_MODEL();
  EXPECT_EQ(pooling_of(model), std::nullopt);  // the test model names none
  EXPECT_EQ(pooling_of(*with_pooling_type(gguf::Value::u32(0))), std::nullopt);
  EXPECT_EQ(pooling_of(*with_pooling_type(gguf::Value::u32(1))), Pooling::Mean);
  EXPECT_EQ(pooling_of(*with_pooling_type(gguf::Value::u32(2))), Pooling::First);
  EXPECT_EQ(pooling_of(*with_pooling_type(gguf::Value::u32(3))), Pooling::Last);
  EXPECT_THROW(pooling_of(*with_pooling_type(gguf::Value::u32(4))), ModelError);          // rank
  EXPECT_THROW(pooling_of(*with_pooling_type(gguf::Value::string("mean"))), ModelError);  // not a number
  for (const Pooling p : {Pooling::Last, Pooling::Mean, Pooling::First})
    EXPECT_EQ(pooling_by_name(pooling_name(p)), p);
  EXPECT_EQ(pooling_by_name("cls"), std::nullopt);
}

TEST(EngineEmbedding, BadRequestsAreRefused) {
  LAMINA_REQUIRE_MODEL();
  CpuForward forward(model, forward_options(1, 16));
  Engine engine(model, forward, {});
  auto ignore = [](EmbeddingResult) {};
  EXPECT_THROW(engine.embed({}, ignore), std::invalid_argument);
  EXPECT_THROW(engine.embed({{{}}, Pooling::Last}, ignore), std::invalid_argument);
  EXPECT_THROW(engine.embed({{std::vector<int32_t>(16, 1)}, Pooling::Last}, ignore), std::invalid_argument);
  EXPECT_THROW(engine.embed({{{1, static_cast<int32_t>(model.config().n_vocab)}}, Pooling::Last}, ignore),
               std::invalid_argument);
}

}  // namespace
}  // namespace lamina::model::engine_test
