// Parses every GGUF file of the test data and checks it against what the
// READMEs of ../shared/testdata state (models, extra, vocab) and against an
// independent walk of the file's layout.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "gguf_layout.h"
#include "lamina/gguf/file.h"
#include "test_support.h"

namespace lamina::gguf {
namespace {

using testing::testdata_file;
using Shape = std::vector<uint64_t>;

Shape shape_of(const TensorInfo& t) { return {t.shape().begin(), t.shape().end()}; }

GgufFile open_testdata(const std::string& relative) {
  return GgufFile::open(testdata_file(relative));
}

// The parsed file agrees with an independent walk of its bytes: every key in
// file order, every tensor info, the data section and each tensor's view.
void expect_matches_layout(const GgufFile& f, const std::filesystem::path& path) {
  SCOPED_TRACE(path.string());
  const auto bytes = testing::read_bytes(path);
  ASSERT_EQ(bytes.size(), f.file_size());
  const auto layout = testing::walk_layout(bytes);

  ASSERT_EQ(f.metadata().size(), layout.kvs.size());
  for (std::size_t i = 0; i < layout.kvs.size(); ++i) {
    EXPECT_EQ(f.metadata()[i].key, layout.kvs[i].key);
    EXPECT_EQ(f.metadata()[i].offset, layout.kvs[i].start);
    EXPECT_EQ(static_cast<uint32_t>(f.metadata()[i].value.type()), layout.kvs[i].type);
  }
  EXPECT_EQ(f.data_offset(), layout.data_offset);
  EXPECT_EQ(f.data_offset() % f.alignment(), 0u);

  ASSERT_EQ(f.tensors().size(), layout.tensors.size());
  for (std::size_t i = 0; i < layout.tensors.size(); ++i) {
    const auto& t = f.tensors()[i];
    const auto& want = layout.tensors[i];
    SCOPED_TRACE(want.name);
    EXPECT_EQ(t.name, want.name);
    EXPECT_EQ(shape_of(t), want.ne);
    EXPECT_EQ(static_cast<uint32_t>(t.type), want.type);
    EXPECT_EQ(t.offset, want.offset);
    EXPECT_EQ(t.info_offset, want.start);
    uint64_t n = 1;
    for (uint64_t d : want.ne) n *= d;
    EXPECT_EQ(t.n_elements, n);
    const auto* traits = tensor_type_traits(t.type);
    ASSERT_NE(traits, nullptr);
    EXPECT_EQ(t.n_bytes, n / traits->block_size * traits->type_size);
    ASSERT_EQ(t.data.size(), t.n_bytes);
    EXPECT_EQ(t.data.data(), f.bytes().data() + f.data_offset() + t.offset);
    EXPECT_EQ(f.find_tensor(t.name), &t);
  }
}

TEST(RealFiles, EveryTestdataFileParses) {
  LAMINA_REQUIRE_TESTDATA();
  const auto files = testing::all_testdata_gguf_files();
  // models 2 + extra 1 + vocab 10 + quant 29 + archs 24 at the time of writing.
  ASSERT_GT(files.size(), 60u);
  std::size_t parsed = 0;
  for (const auto& path : files) {
    SCOPED_TRACE(path.string());
    try {
      const GgufFile f = GgufFile::open(path);
      // The top README: every GGUF here is version 3; none sets general.alignment.
      EXPECT_EQ(f.version(), 3u);
      EXPECT_EQ(f.alignment(), 32u);
      EXPECT_FALSE(f.architecture().empty());
      expect_matches_layout(f, path);
      ++parsed;
    } catch (const GgufError& e) {
      ADD_FAILURE() << e.what();
    }
  }
  EXPECT_EQ(parsed, files.size());
}

// The files the READMEs describe are all there (a renamed or dropped file
// should fail loudly, not shrink the suite).
TEST(RealFiles, DocumentedFilesArePresent) {
  LAMINA_REQUIRE_TESTDATA();
  std::map<std::string, int> per_folder;
  for (const auto& path : testing::all_testdata_gguf_files())
    ++per_folder[path.parent_path().filename().string()];
  EXPECT_EQ(per_folder["models"], 2);
  EXPECT_EQ(per_folder["extra"], 1);
  EXPECT_EQ(per_folder["vocab"], 10);
  EXPECT_EQ(per_folder["quant"], 29);
  EXPECT_EQ(per_folder["archs"], 33);  // 24, and 9 of gemma3, gpt-oss, deepseek2 and mixtral
}

TEST(RealFiles, Stories260K) {
  LAMINA_REQUIRE_TESTDATA();
  const GgufFile f = open_testdata("models/stories260K.gguf");
  EXPECT_EQ(f.file_size(), 1185376u);
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.metadata().size(), 19u);
  ASSERT_EQ(f.tensors().size(), 48u);

  EXPECT_EQ(f.architecture(), "llama");
  EXPECT_EQ(f.get_u32("llama.block_count"), 5u);
  EXPECT_EQ(f.get_u32("llama.embedding_length"), 64u);
  EXPECT_EQ(f.get_u32("llama.feed_forward_length"), 172u);
  EXPECT_EQ(f.get_u32("llama.attention.head_count"), 8u);
  EXPECT_EQ(f.get_u32("llama.attention.head_count_kv"), 4u);
  EXPECT_EQ(f.get_u32("llama.rope.dimension_count"), 8u);
  EXPECT_EQ(f.get_u32("llama.context_length"), 2048u);
  EXPECT_EQ(f.get_f32("llama.attention.layer_norm_rms_epsilon"), 1e-5f);
  EXPECT_FALSE(f.contains("llama.rope.freq_base"));

  // Tokenizer: SPM, 512 tokens, <unk> <s> </s>, 256 byte tokens, then pieces scored 0, -1, ...
  EXPECT_EQ(f.get_string("tokenizer.ggml.model"), "llama");
  EXPECT_FALSE(f.contains("tokenizer.ggml.pre"));
  EXPECT_FALSE(f.contains("tokenizer.ggml.add_bos_token"));
  const auto tokens = f.get_string_array("tokenizer.ggml.tokens");
  const auto types = f.get_i32_array("tokenizer.ggml.token_type");
  const auto scores = f.get_f32_array("tokenizer.ggml.scores");
  ASSERT_EQ(tokens.size(), 512u);
  ASSERT_EQ(types.size(), 512u);
  ASSERT_EQ(scores.size(), 512u);
  EXPECT_EQ(tokens[0], "<unk>");
  EXPECT_EQ(tokens[1], "<s>");
  EXPECT_EQ(tokens[2], "</s>");
  EXPECT_EQ(types[0], 2);
  EXPECT_EQ(types[1], 3);
  EXPECT_EQ(types[2], 3);
  for (int b = 0; b < 256; ++b) {
    char want[8];
    std::snprintf(want, sizeof want, "<0x%02X>", b);
    EXPECT_EQ(tokens[3 + b], want);
    EXPECT_EQ(types[3 + b], 6);
  }
  for (std::size_t i = 259; i < 512; ++i) {
    EXPECT_EQ(types[i], 1) << i;
    EXPECT_EQ(scores[i], -static_cast<float>(i - 259)) << i;
  }
  EXPECT_EQ(f.get_u32("tokenizer.ggml.unknown_token_id"), 0u);
  EXPECT_EQ(f.get_u32("tokenizer.ggml.bos_token_id"), 1u);
  EXPECT_EQ(f.get_u32("tokenizer.ggml.eos_token_id"), 2u);
  EXPECT_EQ(f.get_u32("tokenizer.ggml.seperator_token_id"), 0xFFFFFFFFu);
  EXPECT_EQ(f.get_u32("tokenizer.ggml.padding_token_id"), 0xFFFFFFFFu);

  // The tokenizer pairs come before general.architecture: lookups must not rely on order.
  std::size_t tokens_at = 0, arch_at = 0;
  for (std::size_t i = 0; i < f.metadata().size(); ++i) {
    if (f.metadata()[i].key == "tokenizer.ggml.tokens") tokens_at = i;
    if (f.metadata()[i].key == "general.architecture") arch_at = i;
  }
  EXPECT_LT(tokens_at, arch_at);

  // All F32; head_dim 8, so K/V are 4 heads x 8 = 32 wide.
  for (const auto& t : f.tensors()) EXPECT_EQ(t.type, TensorType::F32) << t.name;
  EXPECT_EQ(shape_of(f.tensor("token_embd.weight")), (Shape{64, 512}));
  EXPECT_EQ(shape_of(f.tensor("output.weight")), (Shape{64, 512}));
  EXPECT_EQ(shape_of(f.tensor("output_norm.weight")), (Shape{64}));
  for (int b = 0; b < 5; ++b) {
    const std::string p = "blk." + std::to_string(b) + ".";
    EXPECT_EQ(shape_of(f.tensor(p + "attn_q.weight")), (Shape{64, 64}));
    EXPECT_EQ(shape_of(f.tensor(p + "attn_k.weight")), (Shape{64, 32}));
    EXPECT_EQ(shape_of(f.tensor(p + "attn_v.weight")), (Shape{64, 32}));
    EXPECT_EQ(shape_of(f.tensor(p + "attn_output.weight")), (Shape{64, 64}));
    EXPECT_EQ(shape_of(f.tensor(p + "attn_norm.weight")), (Shape{64}));
    EXPECT_EQ(shape_of(f.tensor(p + "ffn_gate.weight")), (Shape{64, 172}));
    EXPECT_EQ(shape_of(f.tensor(p + "ffn_up.weight")), (Shape{64, 172}));
    EXPECT_EQ(shape_of(f.tensor(p + "ffn_down.weight")), (Shape{172, 64}));
    EXPECT_EQ(shape_of(f.tensor(p + "ffn_norm.weight")), (Shape{64}));
  }
  // The README: output is a copy of token_embd. The views must show the same bytes.
  const auto& embd = f.tensor("token_embd.weight");
  const auto& out = f.tensor("output.weight");
  EXPECT_EQ(embd.n_bytes, 64u * 512u * 4u);
  EXPECT_TRUE(std::equal(embd.data.begin(), embd.data.end(), out.data.begin(), out.data.end()));
  EXPECT_NE(embd.data.data(), out.data.data());
}

TEST(RealFiles, TinyStories656KQ8_0) {
  LAMINA_REQUIRE_TESTDATA();
  const GgufFile f = open_testdata("models/TinyStories-656K-Q8_0.gguf");
  EXPECT_EQ(f.file_size(), 749728u);
  ASSERT_EQ(f.tensors().size(), 20u);
  EXPECT_EQ(f.architecture(), "llama");
  EXPECT_EQ(f.get_u32("llama.block_count"), 2u);
  EXPECT_EQ(f.get_u32("llama.embedding_length"), 128u);
  EXPECT_EQ(f.get_u32("llama.feed_forward_length"), 384u);
  EXPECT_EQ(f.get_u32("llama.attention.head_count"), 8u);
  EXPECT_EQ(f.get_u32("llama.attention.head_count_kv"), 4u);
  EXPECT_EQ(f.get_u32("llama.rope.dimension_count"), 16u);
  EXPECT_EQ(f.get_f32("llama.rope.freq_base"), 10000.0f);
  EXPECT_EQ(f.get_f32("llama.attention.layer_norm_rms_epsilon"), 1e-6f);
  EXPECT_EQ(f.get_u32("llama.context_length"), 512u);
  EXPECT_EQ(f.get_u32("general.file_type"), 7u);
  EXPECT_EQ(f.get_u32("general.quantization_version"), 2u);
  EXPECT_EQ(f.get_string("general.license"), "apache-2.0");
  EXPECT_EQ(f.get_string_array("general.languages"), (std::vector<std::string>{"en"}));
  EXPECT_EQ(f.get_array("general.languages").element_type(), ValueType::String);

  EXPECT_EQ(f.find_tensor("output.weight"), nullptr);
  for (const auto& t : f.tensors()) {
    if (t.n_dims == 2)
      EXPECT_EQ(t.type, TensorType::Q8_0) << t.name;
    else
      EXPECT_EQ(t.type, TensorType::F32) << t.name;
  }
  const auto& embd = f.tensor("token_embd.weight");
  EXPECT_EQ(shape_of(embd), (Shape{128, 2048}));
  EXPECT_EQ(embd.n_bytes, 128u / 32u * 34u * 2048u);
  EXPECT_EQ(embd.row_bytes(), 4u * 34u);
  EXPECT_EQ(shape_of(f.tensor("blk.1.ffn_down.weight")), (Shape{384, 128}));
  EXPECT_EQ(shape_of(f.tensor("blk.1.attn_k.weight")), (Shape{128, 64}));

  EXPECT_EQ(f.get_string("tokenizer.ggml.model"), "llama");
  EXPECT_EQ(f.get_string("tokenizer.ggml.pre"), "default");
  EXPECT_TRUE(f.get_bool("tokenizer.ggml.add_bos_token"));
  EXPECT_EQ(f.get_u32("tokenizer.ggml.bos_token_id"), 1u);
  EXPECT_EQ(f.get_u32("tokenizer.ggml.eos_token_id"), 2u);
  const auto tokens = f.get_string_array("tokenizer.ggml.tokens");
  ASSERT_EQ(tokens.size(), 2048u);
  EXPECT_EQ(tokens[0], "<unk>");
  EXPECT_EQ(tokens[1], "<|start_story|>");
  EXPECT_EQ(tokens[2], "<|end_story|>");
  // "Once upon a time" -> [1, 80, 147, 201, 282, 57] per the README.
  EXPECT_EQ(tokens[80], "\u2581");
  EXPECT_EQ(tokens[147], "On");
  EXPECT_EQ(tokens[201], "ce\u2581");
  EXPECT_EQ(tokens[282], "upon\u2581a\u2581tim");
  EXPECT_EQ(tokens[57], "e");
  for (const auto& t : tokens) EXPECT_NE(t.rfind("<0x", 0), 0u) << "byte token " << t;
  EXPECT_EQ(f.get_i32_array("tokenizer.ggml.token_type")[2], 3);
  for (float s : f.get_f32_array("tokenizer.ggml.scores")) EXPECT_EQ(s, -1000.0f);
}

TEST(RealFiles, LlamaTinyRandomF16) {
  LAMINA_REQUIRE_TESTDATA();
  const GgufFile f = open_testdata("extra/llama-2-tiny-random.gguf");
  EXPECT_EQ(f.file_size(), 1750560u);
  EXPECT_EQ(f.architecture(), "llama");
  EXPECT_EQ(f.get_u32("llama.block_count"), 1u);
  EXPECT_EQ(f.get_u32("llama.embedding_length"), 8u);
  EXPECT_EQ(f.get_u32("llama.feed_forward_length"), 32u);
  EXPECT_EQ(f.get_u32("llama.attention.head_count"), 2u);
  EXPECT_EQ(f.get_u32("general.file_type"), 1u);
  EXPECT_EQ(f.get_string_array("tokenizer.ggml.tokens").size(), 32000u);
  for (const auto& t : f.tensors()) {
    if (t.n_dims == 2)
      EXPECT_EQ(t.type, TensorType::F16) << t.name;
    else
      EXPECT_EQ(t.type, TensorType::F32) << t.name;
  }
  EXPECT_EQ(shape_of(f.tensor("token_embd.weight")), (Shape{8, 32000}));
  EXPECT_EQ(shape_of(f.tensor("output.weight")), (Shape{8, 32000}));
  EXPECT_EQ(f.tensor("output.weight").n_bytes, 8u * 32000u * 2u);
}

struct VocabFact {
  const char* name;
  uint64_t size;
  const char* model;
  const char* pre;
  std::size_t n_vocab;
};

// The table of testdata/README.md section 3.
constexpr VocabFact kVocabs[] = {
    {"llama-spm", 723869, "llama", "default", 32000},
    {"phi-3", 726019, "llama", "default", 32064},
    {"deepseek-llm", 3970167, "gpt2", "deepseek-llm", 102400},
    {"deepseek-coder", 1156067, "gpt2", "deepseek-coder", 32256},
    {"gpt-2", 1766807, "gpt2", "gpt-2", 50257},
    {"falcon", 2287728, "gpt2", "falcon", 65024},
    {"mpt", 1771393, "gpt2", "mpt", 50432},
    {"starcoder", 1719346, "gpt2", "starcoder", 49152},
    {"refact", 1720710, "gpt2", "refact", 49216},
    {"bert-bge", 627549, "bert", "bert-bge", 30522},
};

TEST(RealFiles, VocabFiles) {
  LAMINA_REQUIRE_TESTDATA();
  for (const auto& v : kVocabs) {
    SCOPED_TRACE(v.name);
    const GgufFile f = open_testdata(std::string("vocab/ggml-vocab-") + v.name + ".gguf");
    EXPECT_EQ(f.file_size(), v.size);
    EXPECT_TRUE(f.tensors().empty());
    EXPECT_EQ(f.get_string("tokenizer.ggml.model"), v.model);
    EXPECT_EQ(f.get_string("tokenizer.ggml.pre"), v.pre);
    EXPECT_EQ(f.get_string_array("tokenizer.ggml.tokens").size(), v.n_vocab);
    // SPM vocabs carry scores, BPE ones merges, the WordPiece one neither.
    const std::string model = v.model;
    EXPECT_EQ(f.contains("tokenizer.ggml.scores"), model == "llama");
    EXPECT_EQ(f.contains("tokenizer.ggml.merges"), model == "gpt2");
    if (model == "gpt2") {
      EXPECT_FALSE(f.get_string_array("tokenizer.ggml.merges").empty());
    }
  }
  const GgufFile phi3 = open_testdata("vocab/ggml-vocab-phi-3.gguf");
  EXPECT_EQ(phi3.get_u32("tokenizer.ggml.eos_token_id"), 32000u);
  EXPECT_FALSE(phi3.get_string("tokenizer.chat_template").empty());
  const GgufFile coder = open_testdata("vocab/ggml-vocab-deepseek-coder.gguf");
  EXPECT_EQ(coder.architecture(), "llama");
  EXPECT_TRUE(coder.get_bool("tokenizer.ggml.add_bos_token"));
}

TEST(TypedAccessors, ErrorsNameTheKey) {
  LAMINA_REQUIRE_TESTDATA();
  const GgufFile f = open_testdata("models/stories260K.gguf");
  auto expect_error_naming = [](auto&& call, const std::string& what) {
    try {
      call();
      ADD_FAILURE() << "no error for " << what;
    } catch (const GgufError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  // Missing keys.
  expect_error_naming([&] { (void)f.get_u32("llama.no_such_key"); }, "llama.no_such_key");
  expect_error_naming([&] { (void)f.get_string("general.nope"); }, "general.nope");
  expect_error_naming([&] { (void)f.get_string_array("tokenizer.nope"); }, "tokenizer.nope");
  expect_error_naming([&] { (void)f.at("x.y"); }, "x.y");
  expect_error_naming([&] { (void)f.tensor("blk.9.attn_q.weight"); }, "blk.9.attn_q.weight");
  // Type mismatches name the key and both types.
  expect_error_naming([&] { (void)f.get_string("llama.block_count"); }, "llama.block_count");
  expect_error_naming([&] { (void)f.get_string("llama.block_count"); }, "uint32");
  expect_error_naming([&] { (void)f.get_u64("llama.block_count"); }, "llama.block_count");
  expect_error_naming([&] { (void)f.get_i32("llama.block_count"); }, "int32");
  expect_error_naming([&] { (void)f.get_f64("llama.attention.layer_norm_rms_epsilon"); },
                      "float32");
  expect_error_naming([&] { (void)f.get_u32("general.architecture"); }, "general.architecture");
  expect_error_naming([&] { (void)f.get_array("general.architecture"); }, "general.architecture");
  expect_error_naming([&] { (void)f.get_f32_array("tokenizer.ggml.tokens"); },
                      "tokenizer.ggml.tokens");
  expect_error_naming([&] { (void)f.get_string_array("tokenizer.ggml.scores"); },
                      "tokenizer.ggml.scores");
  expect_error_naming([&] { (void)f.get_i32_array("tokenizer.ggml.tokens"); }, "string");

  // What does exist reads back through every access path.
  EXPECT_EQ(f.at("llama.block_count").as_uint64(), 5u);
  EXPECT_EQ(f.at("llama.block_count").as_int64(), 5);
  EXPECT_EQ(f.at("llama.attention.layer_norm_rms_epsilon").as_double(), double{1e-5f});
  EXPECT_EQ(f.find("llama.nope"), nullptr);
  EXPECT_EQ(f.find_tensor("nope"), nullptr);
}

}  // namespace
}  // namespace lamina::gguf
