// Checks the DERIVED GGUF files of the test data (quant/ and archs/) against
// the facts their READMEs state: tensor names, types, shapes, sizes, metadata.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "lamina/gguf/file.h"
#include "test_support.h"

namespace lamina::gguf {
namespace {

using testing::testdata_file;
using Shape = std::vector<uint64_t>;

Shape shape_of(const TensorInfo& t) { return {t.shape().begin(), t.shape().end()}; }

struct RoundtripFact {
  const char* type;
  TensorType id;
  uint64_t q_bytes;
  uint64_t file_size;
};

// quant/README.md: the RMSE table ("bytes of q") and the checksum table (file sizes).
const RoundtripFact kRoundtrips[] = {
    {"f16", TensorType::F16, 16384, 82592},      {"bf16", TensorType::BF16, 16384, 82592},
    {"q4_0", TensorType::Q4_0, 4608, 70816},     {"q4_1", TensorType::Q4_1, 5120, 71328},
    {"q5_0", TensorType::Q5_0, 5632, 71840},     {"q5_1", TensorType::Q5_1, 6144, 72352},
    {"q8_0", TensorType::Q8_0, 8704, 74912},     {"q2_k", TensorType::Q2_K, 2688, 68896},
    {"q3_k", TensorType::Q3_K, 3520, 69728},     {"q4_k", TensorType::Q4_K, 4608, 70816},
    {"q5_k", TensorType::Q5_K, 5632, 71840},     {"q6_k", TensorType::Q6_K, 6720, 72928},
    {"q8_k", TensorType::Q8_K, 9344, 75552},     {"iq4_nl", TensorType::IQ4_NL, 4608, 70816},
    {"iq4_xs", TensorType::IQ4_XS, 4352, 70560},
};

TEST(QuantFiles, RoundtripFiles) {
  LAMINA_REQUIRE_TESTDATA();
  for (const auto& r : kRoundtrips) {
    SCOPED_TRACE(r.type);
    const GgufFile f = GgufFile::open(testdata_file(std::string("quant/") + r.type + ".gguf"));
    EXPECT_EQ(f.file_size(), r.file_size);
    EXPECT_EQ(f.architecture(), "lamina-testdata");
    EXPECT_EQ(f.get_string("lamina.testdata.kind"), "quant-roundtrip");
    EXPECT_EQ(f.get_string("lamina.testdata.type"), r.type);
    EXPECT_EQ(tensor_type_from_name(f.get_string("lamina.testdata.type")), r.id);
    EXPECT_EQ(f.get_u64("lamina.testdata.seed"), 20261121u);
    EXPECT_GT(f.get_f64("lamina.testdata.rmse"), 0.0);
    EXPECT_GT(f.get_f64("lamina.testdata.max_abs_err"), f.get_f64("lamina.testdata.rmse"));
    ASSERT_EQ(f.tensors().size(), 3u);
    const auto& src = f.tensor("src");
    const auto& q = f.tensor("q");
    const auto& deq = f.tensor("deq");
    for (const auto* t : {&src, &q, &deq}) EXPECT_EQ(shape_of(*t), (Shape{1024, 8}));
    EXPECT_EQ(src.type, TensorType::F32);
    EXPECT_EQ(deq.type, TensorType::F32);
    EXPECT_EQ(q.type, r.id);
    EXPECT_EQ(q.n_bytes, r.q_bytes);
    EXPECT_EQ(src.n_bytes, 1024u * 8u * 4u);
  }
  // Q8_K (type 15) is activation-only in ggml but must still be known.
  const auto* q8k = tensor_type_traits(15u);
  ASSERT_NE(q8k, nullptr);
  EXPECT_EQ(q8k->name, "Q8_K");
}

struct DotFact {
  const char* type;
  TensorType id;
  const char* activation;
  uint64_t activation_row_bytes;  // one 1024-value column as the activation type stores it
  uint64_t file_size;
};

// quant/README.md: activation type per weight type, block sizes of Q8_0 (34 B / 32),
// Q8_1 (36 B / 32), Q8_K (292 B / 256), F16/BF16 (2 B), and the checksum table.
const DotFact kDots[] = {
    {"f16", TensorType::F16, "f16", 2048, 75200},
    {"bf16", TensorType::BF16, "bf16", 2048, 75200},
    {"q4_0", TensorType::Q4_0, "q8_0", 1088, 47808},
    {"q4_1", TensorType::Q4_1, "q8_1", 1152, 49088},
    {"q5_0", TensorType::Q5_0, "q8_0", 1088, 49856},
    {"q5_1", TensorType::Q5_1, "q8_1", 1152, 51136},
    {"q8_0", TensorType::Q8_0, "q8_0", 1088, 56000},
    {"q2_k", TensorType::Q2_K, "q8_k", 1168, 44288},
    {"q3_k", TensorType::Q3_K, "q8_k", 1168, 45952},
    {"q4_k", TensorType::Q4_K, "q8_k", 1168, 48128},
    {"q5_k", TensorType::Q5_K, "q8_k", 1168, 50176},
    {"q6_k", TensorType::Q6_K, "q8_k", 1168, 52352},
    {"iq4_nl", TensorType::IQ4_NL, "q8_0", 1088, 47808},
    {"iq4_xs", TensorType::IQ4_XS, "q8_k", 1168, 47616},
};

TEST(QuantFiles, DotFiles) {
  LAMINA_REQUIRE_TESTDATA();
  for (const auto& d : kDots) {
    SCOPED_TRACE(d.type);
    const GgufFile f = GgufFile::open(testdata_file(std::string("quant/dot_") + d.type + ".gguf"));
    EXPECT_EQ(f.file_size(), d.file_size);
    EXPECT_EQ(f.get_string("lamina.testdata.kind"), "quant-dot");
    EXPECT_EQ(f.get_string("lamina.testdata.type"), d.type);
    EXPECT_EQ(f.get_string("lamina.testdata.activation_type"), d.activation);
    ASSERT_EQ(f.tensors().size(), 7u);
    EXPECT_EQ(f.tensor("w").type, d.id);
    EXPECT_EQ(shape_of(f.tensor("w")), (Shape{1024, 16}));
    for (const char* name : {"x", "x_act_deq"}) {
      EXPECT_EQ(f.tensor(name).type, TensorType::F32) << name;
      EXPECT_EQ(shape_of(f.tensor(name)), (Shape{1024, 4})) << name;
    }
    for (const char* name : {"y_ref", "y_ggml", "y_xq_ref"}) {
      EXPECT_EQ(f.tensor(name).type, TensorType::F32) << name;
      EXPECT_EQ(shape_of(f.tensor(name)), (Shape{16, 4})) << name;
    }
    const auto& raw = f.tensor("x_act_raw");
    EXPECT_EQ(raw.type, TensorType::I8);
    EXPECT_EQ(shape_of(raw), (Shape{d.activation_row_bytes, 4}));
  }
}

using ShapeTable = std::vector<std::pair<std::string, Shape>>;

struct ArchFact {
  const char* variant;
  const char* arch;
  uint32_t layers;
  uint32_t n_head, n_head_kv, n_ff;
  uint64_t params;
  uint64_t f32_size;
  ShapeTable globals;  // tensors outside the blocks
  ShapeTable block;    // block 0's tensors, without the "blk.0." prefix
};

// archs/README.md: "Model configurations" and "Tensors" (ggml shapes).
const std::vector<ArchFact>& arch_facts() {
  const ShapeTable llama_attn = {{"attn_norm.weight", {256}},        {"attn_q.weight", {256, 256}},
                                 {"attn_k.weight", {256, 128}},      {"attn_v.weight", {256, 128}},
                                 {"attn_output.weight", {256, 256}}, {"ffn_norm.weight", {256}}};
  auto with = [](ShapeTable a, const ShapeTable& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  const ShapeTable ffn512 = {{"ffn_gate.weight", {256, 512}},
                             {"ffn_up.weight", {256, 512}},
                             {"ffn_down.weight", {512, 256}}};
  const ShapeTable qk_norm = {{"attn_q_norm.weight", {64}}, {"attn_k_norm.weight", {64}}};
  static const std::vector<ArchFact> facts = {
      {"llama", "llama", 2, 4, 2, 512, 1443072, 5785152,
       {{"token_embd.weight", {256, 512}},
        {"output_norm.weight", {256}},
        {"output.weight", {256, 512}}},
       with(llama_attn, ffn512)},
      {"llama3", "llama", 3, 4, 2, 256, 1312544, 5263584,
       {{"token_embd.weight", {256, 512}},
        {"output_norm.weight", {256}},
        {"rope_freqs.weight", {32}}},
       with(llama_attn, {{"ffn_gate.weight", {256, 256}},
                         {"ffn_up.weight", {256, 256}},
                         {"ffn_down.weight", {256, 256}}})},
      {"qwen2", "qwen2", 2, 4, 2, 512, 1313024, 5265216,
       {{"token_embd.weight", {256, 512}}, {"output_norm.weight", {256}}},
       with(with(llama_attn, ffn512),
            {{"attn_q.bias", {256}}, {"attn_k.bias", {128}}, {"attn_v.bias", {128}}})},
      {"qwen3", "qwen3", 2, 8, 2, 512, 1574400, 6310720,
       {{"token_embd.weight", {256, 512}}, {"output_norm.weight", {256}}},
       with(with({{"attn_norm.weight", {256}},
                  {"attn_q.weight", {256, 512}},
                  {"attn_k.weight", {256, 128}},
                  {"attn_v.weight", {256, 128}},
                  {"attn_output.weight", {512, 256}},
                  {"ffn_norm.weight", {256}}},
                 ffn512),
            qk_norm)},
      {"phi3", "phi3", 2, 4, 2, 512, 1443072, 5784800,
       {{"token_embd.weight", {256, 512}},
        {"output_norm.weight", {256}},
        {"output.weight", {256, 512}}},
       {{"attn_norm.weight", {256}},
        {"attn_qkv.weight", {256, 512}},
        {"attn_output.weight", {256, 256}},
        {"ffn_norm.weight", {256}},
        {"ffn_up.weight", {256, 1024}},
        {"ffn_down.weight", {512, 256}}}},
      {"gpt2", "gpt2", 2, 4, 4, 512, 1251328, 5018400,
       {{"token_embd.weight", {256, 512}},
        {"position_embd.weight", {256, 256}},
        {"output_norm.weight", {256}},
        {"output_norm.bias", {256}}},
       {{"attn_norm.weight", {256}},
        {"attn_norm.bias", {256}},
        {"attn_qkv.weight", {256, 768}},
        {"attn_qkv.bias", {768}},
        {"attn_output.weight", {256, 256}},
        {"attn_output.bias", {256}},
        {"ffn_norm.weight", {256}},
        {"ffn_norm.bias", {256}},
        {"ffn_up.weight", {256, 512}},
        {"ffn_up.bias", {512}},
        {"ffn_down.weight", {512, 256}},
        {"ffn_down.bias", {256}}}},
      {"gemma2", "gemma2", 2, 4, 2, 512, 1313024, 5265408,
       {{"token_embd.weight", {256, 512}}, {"output_norm.weight", {256}}},
       with(with(llama_attn, ffn512),
            {{"post_attention_norm.weight", {256}}, {"post_ffw_norm.weight", {256}}})},
      {"qwen3moe", "qwen3moe", 2, 4, 2, 512, 1314304, 5270720,
       {{"token_embd.weight", {256, 512}}, {"output_norm.weight", {256}}},
       with(with(llama_attn, qk_norm), {{"ffn_gate_inp.weight", {256, 4}},
                                        {"ffn_gate_exps.weight", {256, 128, 4}},
                                        {"ffn_up_exps.weight", {256, 128, 4}},
                                        {"ffn_down_exps.weight", {128, 256, 4}}})},
  };
  return facts;
}

struct QuantizedFact {
  const char* file;
  std::map<std::string, int> type_counts;
  std::map<std::string, std::string> named;  // tensor -> type, the README's exceptions
};

// archs/README.md: "Quantized variants: tensor types (from the files)".
const std::vector<QuantizedFact>& quantized_facts() {
  static const std::vector<QuantizedFact> facts = {
      {"llama.q8_0", {{"F32", 5}, {"Q8_0", 16}}, {}},
      {"llama.q4_k_m",
       {{"F32", 5}, {"Q4_K", 13}, {"Q6_K", 3}},
       {{"output.weight", "Q6_K"},
        {"blk.1.attn_v.weight", "Q6_K"},
        {"blk.1.ffn_down.weight", "Q6_K"}}},
      {"llama3.q8_0", {{"F32", 8}, {"Q8_0", 22}}, {}},
      {"llama3.q4_k_m",
       {{"F32", 8}, {"Q4_K", 19}, {"Q6_K", 3}},
       {{"token_embd.weight", "Q6_K"},
        {"blk.2.attn_v.weight", "Q6_K"},
        {"blk.2.ffn_down.weight", "Q6_K"}}},
      {"qwen2.q8_0", {{"F32", 11}, {"Q8_0", 15}}, {}},
      {"qwen2.q4_k_m",
       {{"F32", 11}, {"Q4_K", 12}, {"Q6_K", 3}},
       {{"token_embd.weight", "Q6_K"},
        {"blk.1.attn_v.weight", "Q6_K"},
        {"blk.1.ffn_down.weight", "Q6_K"}}},
      {"qwen3.q8_0", {{"F32", 9}, {"Q8_0", 15}}, {}},
      {"qwen3.q4_k_m",
       {{"F32", 9}, {"Q4_K", 12}, {"Q6_K", 3}},
       {{"token_embd.weight", "Q6_K"},
        {"blk.1.attn_v.weight", "Q6_K"},
        {"blk.1.ffn_down.weight", "Q6_K"}}},
      {"phi3.q8_0", {{"F32", 5}, {"Q8_0", 10}}, {}},
      {"phi3.q4_k_m",
       {{"F32", 5}, {"Q4_K", 7}, {"Q6_K", 3}},
       {{"output.weight", "Q6_K"},
        {"blk.1.attn_qkv.weight", "Q6_K"},
        {"blk.1.ffn_down.weight", "Q6_K"}}},
      {"gpt2.q8_0", {{"F32", 19}, {"Q8_0", 9}}, {}},
      {"gpt2.q4_k_m",
       {{"F32", 19}, {"Q4_K", 6}, {"Q6_K", 3}},
       {{"token_embd.weight", "Q6_K"},
        {"blk.1.attn_qkv.weight", "Q6_K"},
        {"blk.1.ffn_down.weight", "Q6_K"}}},
      {"gemma2.q8_0", {{"F32", 9}, {"Q8_0", 15}}, {}},
      {"gemma2.q4_k_m",
       {{"F32", 9}, {"Q4_K", 12}, {"Q6_K", 3}},
       {{"token_embd.weight", "Q6_K"},
        {"blk.1.attn_v.weight", "Q6_K"},
        {"blk.1.ffn_down.weight", "Q6_K"}}},
      {"qwen3moe.q8_0", {{"F32", 11}, {"Q8_0", 15}}, {}},
      {"qwen3moe.q4_k_m",
       {{"F32", 11}, {"Q4_K", 11}, {"Q5_0", 1}, {"Q6_K", 2}, {"Q8_0", 1}},
       {{"token_embd.weight", "Q6_K"},
        {"blk.0.ffn_down_exps.weight", "Q5_0"},
        {"blk.1.attn_v.weight", "Q6_K"},
        {"blk.1.ffn_down_exps.weight", "Q8_0"}}},
  };
  return facts;
}

TEST(ArchFiles, ShapesAndHyperparametersOfEveryPrecision) {
  LAMINA_REQUIRE_TESTDATA();
  for (const auto& a : arch_facts()) {
    for (const char* precision : {"f32", "q8_0", "q4_k_m"}) {
      const std::string stem = std::string(a.variant) + "." + precision;
      SCOPED_TRACE(stem);
      const GgufFile f = GgufFile::open(testdata_file("archs/" + stem + ".gguf"));
      const std::string arch = a.arch;
      EXPECT_EQ(f.architecture(), arch);
      const std::string name = std::string(a.variant) == "phi3" ? "phi" : a.variant;
      EXPECT_EQ(f.get_string("general.name"), "lamina-tiny-random-" + name);
      EXPECT_EQ(f.get_u32(arch + ".block_count"), a.layers);
      EXPECT_EQ(f.get_u32(arch + ".embedding_length"), 256u);
      EXPECT_EQ(f.get_u32(arch + ".context_length"), 256u);
      EXPECT_EQ(f.get_u32(arch + ".attention.head_count"), a.n_head);
      EXPECT_EQ(f.get_u32(arch + ".attention.head_count_kv"), a.n_head_kv);
      EXPECT_EQ(f.get_u32(arch + ".feed_forward_length"), a.n_ff);
      EXPECT_EQ(f.get_string_array("tokenizer.ggml.tokens").size(), 512u);
      const uint32_t file_type = std::string(precision) == "f32"    ? 0
                                 : std::string(precision) == "q8_0" ? 7
                                                                    : 15;
      EXPECT_EQ(f.get_u32("general.file_type"), file_type);
      if (file_type != 0) {
        EXPECT_EQ(f.get_u32("general.quantization_version"), 2u);
      }

      EXPECT_EQ(f.tensors().size(), a.globals.size() + a.layers * a.block.size());
      for (const auto& [tensor, shape] : a.globals) {
        const auto* t = f.find_tensor(tensor);
        ASSERT_NE(t, nullptr) << tensor;
        EXPECT_EQ(shape_of(*t), shape) << tensor;
      }
      for (uint32_t b = 0; b < a.layers; ++b) {
        for (const auto& [tensor, shape] : a.block) {
          const std::string full = "blk." + std::to_string(b) + "." + tensor;
          const auto* t = f.find_tensor(full);
          ASSERT_NE(t, nullptr) << full;
          EXPECT_EQ(shape_of(*t), shape) << full;
        }
      }
      uint64_t params = 0;
      for (const auto& t : f.tensors()) params += t.n_elements;
      EXPECT_EQ(params, a.params);
      if (file_type == 0) {
        EXPECT_EQ(f.file_size(), a.f32_size);
        for (const auto& t : f.tensors()) EXPECT_EQ(t.type, TensorType::F32) << t.name;
      }
    }
  }
}

TEST(ArchFiles, QuantizedTensorTypes) {
  LAMINA_REQUIRE_TESTDATA();
  for (const auto& q : quantized_facts()) {
    SCOPED_TRACE(q.file);
    const GgufFile f = GgufFile::open(testdata_file(std::string("archs/") + q.file + ".gguf"));
    std::map<std::string, int> counts;
    for (const auto& t : f.tensors()) ++counts[std::string(tensor_type_name(t.type))];
    EXPECT_EQ(counts, q.type_counts);
    for (const auto& [tensor, type] : q.named)
      EXPECT_EQ(tensor_type_name(f.tensor(tensor).type), type) << tensor;
    // The MoE router stays F32 in every precision.
    if (std::string(q.file).starts_with("qwen3moe")) {
      EXPECT_EQ(f.tensor("blk.0.ffn_gate_inp.weight").type, TensorType::F32);
    }
  }
}

}  // namespace
}  // namespace lamina::gguf
