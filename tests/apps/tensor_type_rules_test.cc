// The per-tensor type rules on model shapes the test data does not cover
// (32 and 80 layers, 4+ heads per KV head, 8 experts), against choices worked
// out by hand from llama-quantize's rules.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "quant_mix.h"
#include "tensor_type_rules.h"

namespace lamina::quantize {
namespace {

using gguf::TensorType;
using T = TensorType;

struct Model {
  ModelShape shape;
  std::vector<TensorSpec> tensors;
};

Model empty_model(uint32_t n_layer, uint32_t n_head, uint32_t n_head_kv, uint32_t n_expert) {
  Model m;
  m.shape.arch = "llama";
  m.shape.n_layer = n_layer;
  m.shape.n_head = n_head;
  m.shape.n_head_kv = n_head_kv;
  m.shape.n_expert = n_expert;
  return m;
}

// A llama-style model with rows of 4096 (ffn_down: 14336), untied output.
Model llama_like(uint32_t n_layer, uint32_t n_head, uint32_t n_head_kv, bool tied = false) {
  Model m = empty_model(n_layer, n_head, n_head_kv, 0);
  const auto add = [&](std::string name, std::vector<uint64_t> shape) {
    m.tensors.push_back({std::move(name), T::F16, std::move(shape)});
  };
  add("token_embd.weight", {4096, 128256});
  add("output_norm.weight", {4096});
  if (!tied) add("output.weight", {4096, 128256});
  // Blocks listed last first, so the rules must sort them themselves.
  for (uint32_t i = n_layer; i-- > 0;) {
    const std::string b = "blk." + std::to_string(i) + ".";
    add(b + "attn_norm.weight", {4096});
    add(b + "attn_q.weight", {4096, 4096});
    add(b + "attn_k.weight", {4096, 1024});
    add(b + "attn_v.weight", {4096, 1024});
    add(b + "attn_output.weight", {4096, 4096});
    add(b + "ffn_gate.weight", {4096, 14336});
    add(b + "ffn_up.weight", {4096, 14336});
    add(b + "ffn_down.weight", {14336, 4096});
  }
  return m;
}

TensorType type_of(const Model& m, const std::vector<TypeChoice>& choices, const std::string& name) {
  for (std::size_t i = 0; i < m.tensors.size(); ++i) {
    if (m.tensors[i].name == name) return choices[i].type;
  }
  ADD_FAILURE() << "no tensor " << name;
  return T::F32;
}

std::vector<TypeChoice> choose(const Model& m, const char* mix, bool pure = false) {
  TypeRuleOptions options;
  options.mix = find_mix(mix);
  options.pure = pure;
  return choose_tensor_types(m.shape, m.tensors, options);
}

std::string blk(int i, const char* tensor) {
  return "blk." + std::to_string(i) + "." + tensor + ".weight";
}

// use_more_bits over 32 layers: the first and last 4, and every third layer
// from 6 on.
const std::set<int> kMoreBits32 = {0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31};

TEST(TensorTypeRules, Q4_K_M_OnA32LayerModel) {
  const Model m = llama_like(32, 32, 8);
  const auto c = choose(m, "Q4_K_M");
  EXPECT_EQ(type_of(m, c, "output.weight"), T::Q6_K);
  EXPECT_EQ(type_of(m, c, "token_embd.weight"), T::Q4_K);
  EXPECT_EQ(type_of(m, c, "output_norm.weight"), T::F16);  // kept as stored
  for (int i = 0; i < 32; ++i) {
    const T more = kMoreBits32.count(i) ? T::Q6_K : T::Q4_K;
    EXPECT_EQ(type_of(m, c, blk(i, "attn_v")), more) << i;
    EXPECT_EQ(type_of(m, c, blk(i, "ffn_down")), more) << i;
    EXPECT_EQ(type_of(m, c, blk(i, "attn_q")), T::Q4_K) << i;
    EXPECT_EQ(type_of(m, c, blk(i, "ffn_up")), T::Q4_K) << i;
    EXPECT_EQ(type_of(m, c, blk(i, "attn_norm")), T::F16) << i;
  }
}

TEST(TensorTypeRules, SmallAndLargeMixesOnA32LayerModel) {
  const Model m = llama_like(32, 32, 8);  // 4 heads per KV head
  const auto q3m = choose(m, "Q3_K_M");
  const auto q4s = choose(m, "Q4_K_S");
  const auto q2 = choose(m, "Q2_K");
  const auto iq4 = choose(m, "IQ4_XS");
  const auto q5m = choose(m, "Q5_K_M");
  for (int i = 0; i < 32; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(type_of(m, q3m, blk(i, "attn_v")), i < 2 ? T::Q5_K : T::Q4_K);
    EXPECT_EQ(type_of(m, q3m, blk(i, "ffn_down")), i < 2 ? T::Q5_K : T::Q4_K);
    EXPECT_EQ(type_of(m, q3m, blk(i, "attn_output")), T::Q4_K);
    EXPECT_EQ(type_of(m, q3m, blk(i, "attn_q")), T::Q3_K);
    EXPECT_EQ(type_of(m, q4s, blk(i, "attn_v")), i < 4 ? T::Q5_K : T::Q4_K);
    EXPECT_EQ(type_of(m, q4s, blk(i, "ffn_down")), i < 4 ? T::Q5_K : T::Q4_K);
    EXPECT_EQ(type_of(m, q2, blk(i, "attn_v")), T::Q4_K);  // 4 heads per KV head
    EXPECT_EQ(type_of(m, q2, blk(i, "ffn_down")), T::Q3_K);
    EXPECT_EQ(type_of(m, q2, blk(i, "attn_output")), T::Q3_K);
    EXPECT_EQ(type_of(m, iq4, blk(i, "attn_v")), T::Q5_K);
    EXPECT_EQ(type_of(m, iq4, blk(i, "ffn_down")), i < 4 ? T::Q5_K : T::IQ4_XS);
    const T more = kMoreBits32.count(i) ? T::Q6_K : T::Q5_K;
    EXPECT_EQ(type_of(m, q5m, blk(i, "attn_v")), more);
    EXPECT_EQ(type_of(m, q5m, blk(i, "ffn_down")), more);
  }
  EXPECT_EQ(type_of(m, q2, "output.weight"), T::Q6_K);
  EXPECT_EQ(type_of(m, choose(m, "Q8_0"), "output.weight"), T::Q8_0);
  EXPECT_EQ(type_of(m, choose(m, "Q4_0"), "output.weight"), T::Q6_K);
}

TEST(TensorTypeRules, FewerHeadsPerKvHeadKeepLowerTypes) {
  const Model m = llama_like(32, 32, 16);  // 2 heads per KV head
  EXPECT_EQ(type_of(m, choose(m, "Q2_K"), blk(5, "attn_v")), T::Q3_K);
  EXPECT_EQ(type_of(m, choose(m, "IQ4_NL"), blk(5, "attn_v")), T::IQ4_NL);
}

TEST(TensorTypeRules, SeventyBillionLlamaRaisesAttentionV) {
  const Model m = llama_like(80, 64, 8);
  const auto c = choose(m, "Q4_K_S");
  EXPECT_EQ(type_of(m, c, blk(10, "attn_v")), T::Q5_K);  // Q4_K raised
  EXPECT_EQ(type_of(m, c, blk(10, "attn_q")), T::Q4_K);
}

TEST(TensorTypeRules, TiedEmbeddingTakesTheOutputType) {
  const Model m = llama_like(4, 32, 8, /*tied=*/true);
  EXPECT_EQ(type_of(m, choose(m, "Q4_K_M"), "token_embd.weight"), T::Q6_K);
  EXPECT_EQ(type_of(m, choose(m, "Q4_K_M", /*pure=*/true), "token_embd.weight"), T::Q4_K);
}

TEST(TensorTypeRules, PureSkipsTheMixRules) {
  const Model m = llama_like(32, 32, 8);
  const auto c = choose(m, "Q4_K_M", true);
  EXPECT_EQ(type_of(m, c, "output.weight"), T::Q4_K);
  EXPECT_EQ(type_of(m, c, blk(0, "attn_v")), T::Q4_K);
  EXPECT_EQ(type_of(m, c, blk(0, "ffn_down")), T::Q4_K);
}

TEST(TensorTypeRules, EightExpertsGetQ8_0AttentionAndNamedLayers) {
  Model m = empty_model(4, 32, 8, 8);
  for (int i = 0; i < 4; ++i) {
    m.tensors.push_back({blk(i, "attn_v"), T::F16, {4096, 1024}});
    m.tensors.push_back({blk(i, "attn_k"), T::F16, {4096, 1024}});
    m.tensors.push_back({blk(i, "attn_output"), T::F16, {4096, 4096}});
    m.tensors.push_back({blk(i, "ffn_down_exps"), T::F16, {14336, 4096, 8}});
    m.tensors.push_back({blk(i, "ffn_gate_inp"), T::F32, {4096, 8}});
  }
  const auto c = choose(m, "Q4_K_M");
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(type_of(m, c, blk(i, "attn_v")), T::Q8_0);
    EXPECT_EQ(type_of(m, c, blk(i, "attn_k")), T::Q8_0);
    EXPECT_EQ(type_of(m, c, blk(i, "attn_output")), T::Q5_K);
    EXPECT_EQ(type_of(m, c, blk(i, "ffn_gate_inp")), T::F32);  // routers stay
    // use_more_bits over 4 layers: 3 (the last eighth) and 2 (every third).
    const bool more = i == 2 || i == 3;
    EXPECT_EQ(type_of(m, c, blk(i, "ffn_down_exps")), more ? T::Q6_K : T::Q4_K) << i;
  }
  m.tensors.push_back({"blk.9.ffn_down_exps.weight", T::F16, {14336, 4096, 8}});
  EXPECT_THROW(choose(m, "Q4_K_M"), QuantizeError);
}

TEST(TensorTypeRules, FallbacksForRowsThatDoNotFit) {
  Model m = empty_model(1, 8, 8, 0);
  m.tensors.push_back({"blk.0.attn_q.weight", T::F32, {96, 8}});    // fits 32, not 256
  m.tensors.push_back({"blk.0.attn_k.weight", T::F32, {100, 8}});   // fits nothing
  m.tensors.push_back({"output.weight", T::F32, {96, 8}});
  const auto expect = [&](const char* mix, T q, T k, T out) {
    SCOPED_TRACE(mix);
    const auto c = choose(m, mix, true);
    EXPECT_EQ(c[0].type, q);
    EXPECT_EQ(c[1].type, k);
    EXPECT_EQ(c[2].type, out);
  };
  expect("Q2_K", T::Q4_0, T::F16, T::Q4_0);
  expect("Q3_K_S", T::Q4_0, T::F16, T::Q4_0);
  expect("Q4_K_M", T::Q5_0, T::F16, T::Q5_0);
  expect("Q5_K_S", T::Q5_1, T::F16, T::Q5_1);
  expect("Q6_K", T::Q8_0, T::F16, T::Q8_0);
  expect("IQ4_XS", T::IQ4_NL, T::F16, T::IQ4_NL);
  expect("Q8_0", T::Q8_0, T::F16, T::Q8_0);
  const auto c = choose(m, "Q4_K_M", true);
  EXPECT_EQ(c[0].fallback_from, T::Q4_K);
  EXPECT_FALSE(choose(m, "Q8_0", true)[0].fallback_from.has_value());
  // Not pure: output.weight's row does not fit Q4_K, so it is Q8_0.
  EXPECT_EQ(choose(m, "Q4_K_M")[2].type, T::Q8_0);
}

TEST(TensorTypeRules, ExplicitTypeMustFitTheRow) {
  Model m = empty_model(1, 8, 8, 0);
  m.tensors.push_back({"output.weight", T::F32, {96, 8}});
  TypeRuleOptions options;
  options.mix = find_mix("Q4_0");
  options.output_type = T::Q4_K;
  EXPECT_THROW(choose_tensor_types(m.shape, m.tensors, options), QuantizeError);
  options.output_type = T::Q8_0;
  EXPECT_EQ(choose_tensor_types(m.shape, m.tensors, options)[0].type, T::Q8_0);
}

TEST(TensorTypeRules, LlamaQuantizeOrderSortsByBlockNumberThenName) {
  const std::vector<std::string> names = {"blk.10.a", "output.weight", "blk.2.b", "blk.2.a",
                                          "token_embd.weight"};
  const std::vector<std::size_t> order = llama_quantize_order(names);
  EXPECT_EQ(order, (std::vector<std::size_t>{1, 4, 3, 2, 0}));
}

}  // namespace
}  // namespace lamina::quantize
