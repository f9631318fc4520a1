// lamina-synth-model: the tiny presets written, read back and checked for
// shapes, metadata, value statistics, a well-formed BPE tokenizer,
// determinism, and the same per-tensor types and bytes as lamina-quantize.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "lamina/gguf/file.h"
#include "lamina/quant/format.h"
#include "lamina/quant/reference.h"
#include "tool_runner.h"

namespace lamina::apps_test {
namespace {

using gguf::GgufFile;
using gguf::TensorInfo;
using gguf::TensorType;

const std::string kSynth = LAMINA_SYNTH_EXE;
const std::string kQuantize = LAMINA_QUANTIZE_EXE;

GgufFile write_preset(const ScratchDir& dir, const std::string& file,
                      const std::vector<std::string>& args) {
  const ToolResult r = run_tool(kSynth, args);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return GgufFile::open(dir / file);
}

std::vector<float> values_of(const TensorInfo& t) {
  const auto format = *quant::format_from_id(static_cast<uint32_t>(t.type));
  std::vector<float> v(t.n_elements);
  for (uint64_t r = 0; r < t.n_rows(); ++r)
    quant::dequantize_row_ref(format, t.data.data() + r * t.row_bytes(), v.data() + r * t.ne[0],
                              t.ne[0]);
  return v;
}

// The tiny preset: qwen2-style, 2 layers, hidden 256, 4 heads of 64 over 2
// KV heads, ffn 512, vocabulary 1024, tied embeddings, QKV biases.
std::map<std::string, std::vector<uint64_t>> tiny_shapes() {
  std::map<std::string, std::vector<uint64_t>> s = {
      {"token_embd.weight", {256, 1024}},
      {"output_norm.weight", {256}},
  };
  for (const std::string blk : {"blk.0.", "blk.1."}) {
    s[blk + "attn_norm.weight"] = {256};
    s[blk + "attn_q.weight"] = {256, 256};
    s[blk + "attn_k.weight"] = {256, 128};
    s[blk + "attn_v.weight"] = {256, 128};
    s[blk + "attn_q.bias"] = {256};
    s[blk + "attn_k.bias"] = {128};
    s[blk + "attn_v.bias"] = {128};
    s[blk + "attn_output.weight"] = {256, 256};
    s[blk + "ffn_norm.weight"] = {256};
    s[blk + "ffn_gate.weight"] = {256, 512};
    s[blk + "ffn_up.weight"] = {256, 512};
    s[blk + "ffn_down.weight"] = {512, 256};
  }
  return s;
}

class SynthModel : public ::testing::Test {
 protected:
  ScratchDir dir_{"synth"};
};

TEST_F(SynthModel, TinyPresetHasTheShapesMetadataAndValueScales) {
  const GgufFile f =
      write_preset(dir_, "tiny.gguf", {"tiny", (dir_ / "tiny.gguf").string(), "--seed", "5"});
  EXPECT_EQ(f.architecture(), "qwen2");
  EXPECT_EQ(f.get_u32("general.file_type"), 1u);  // mostly F16
  EXPECT_EQ(f.get_u32("qwen2.block_count"), 2u);
  EXPECT_EQ(f.get_u32("qwen2.embedding_length"), 256u);
  EXPECT_EQ(f.get_u32("qwen2.feed_forward_length"), 512u);
  EXPECT_EQ(f.get_u32("qwen2.attention.head_count"), 4u);
  EXPECT_EQ(f.get_u32("qwen2.attention.head_count_kv"), 2u);
  EXPECT_EQ(f.get_u32("qwen2.rope.dimension_count"), 64u);
  EXPECT_FLOAT_EQ(f.get_f32("qwen2.rope.freq_base"), 1e6f);
  EXPECT_FLOAT_EQ(f.get_f32("qwen2.attention.layer_norm_rms_epsilon"), 1e-6f);
  EXPECT_GT(f.get_u32("qwen2.context_length"), 0u);

  const auto shapes = tiny_shapes();
  ASSERT_EQ(f.tensors().size(), shapes.size());
  for (const TensorInfo& t : f.tensors()) {
    SCOPED_TRACE(t.name);
    ASSERT_TRUE(shapes.count(t.name));
    EXPECT_EQ(std::vector<uint64_t>(t.shape().begin(), t.shape().end()), shapes.at(t.name));
    const bool one_dim = t.n_dims == 1;
    EXPECT_EQ(t.type, one_dim ? TensorType::F32 : TensorType::F16);

    const std::vector<float> v = values_of(t);
    double sum = 0.0, sq = 0.0;
    for (float x : v) sum += x;
    const double mean = sum / v.size();
    for (float x : v) sq += (x - mean) * (x - mean);
    const double stddev = std::sqrt(sq / v.size());
    const bool norm = t.name.find("_norm.") != std::string::npos;
    // Mean and standard deviation within 5 standard errors of N(0 or 1, 0.02).
    const double n = static_cast<double>(v.size());
    EXPECT_NEAR(mean, norm ? 1.0 : 0.0, 5 * 0.02 / std::sqrt(n));
    EXPECT_NEAR(stddev, 0.02, 5 * 0.02 / std::sqrt(2 * n));
  }
}

// GPT-2's byte-level alphabet, written out independently of the tool.
std::string byte_char(int b) {
  const auto utf8 = [](uint32_t cp) {
    std::string s;
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
    return s;
  };
  const auto direct = [](int x) { return (x >= 33 && x <= 126) || (x >= 161 && x <= 172) || x >= 174; };
  if (direct(b)) return utf8(static_cast<uint32_t>(b));
  int n = 0;
  for (int x = 0; x < b; ++x) n += direct(x) ? 0 : 1;
  return utf8(static_cast<uint32_t>(256 + n));
}

TEST_F(SynthModel, TokenizerIsAWellFormedByteLevelBpe) {
  const GgufFile f = write_preset(dir_, "tiny.gguf", {"tiny", (dir_ / "tiny.gguf").string()});
  EXPECT_EQ(f.get_string("tokenizer.ggml.model"), "gpt2");
  EXPECT_EQ(f.get_string("tokenizer.ggml.pre"), "qwen2");
  const auto tokens = f.get_string_array("tokenizer.ggml.tokens");
  const auto types = f.get_i32_array("tokenizer.ggml.token_type");
  const auto merges = f.get_string_array("tokenizer.ggml.merges");
  ASSERT_EQ(tokens.size(), 1024u);
  ASSERT_EQ(types.size(), tokens.size());
  EXPECT_EQ(f.get_u32("qwen2.vocab_size"), tokens.size());
  EXPECT_EQ(f.tensor("token_embd.weight").ne[1], tokens.size());

  std::map<std::string, std::size_t> id;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    EXPECT_TRUE(id.emplace(tokens[i], i).second) << "duplicate token " << tokens[i];
  }
  for (int b = 0; b < 256; ++b) EXPECT_TRUE(id.count(byte_char(b))) << "no token for byte " << b;

  // Each merge joins two earlier tokens into a later one; together with the
  // byte tokens the merges make up every normal token.
  std::set<std::size_t> made;
  for (const std::string& m : merges) {
    const auto space = m.find(' ', 1);
    ASSERT_NE(space, std::string::npos) << m;
    const std::string left = m.substr(0, space), right = m.substr(space + 1);
    ASSERT_TRUE(id.count(left) && id.count(right) && id.count(left + right)) << m;
    EXPECT_GT(id[left + right], id[left]) << m;
    EXPECT_GT(id[left + right], id[right]) << m;
    EXPECT_TRUE(made.insert(id[left + right]).second) << "two merges make " << left + right;
  }
  std::size_t normal = 0, control = 0;
  for (int32_t t : types) (t == 1 ? normal : control) += 1;
  EXPECT_EQ(normal, 256 + merges.size());
  EXPECT_EQ(control, tokens.size() - normal);
  for (std::size_t i = normal; i < tokens.size(); ++i) EXPECT_EQ(types[i], 3) << tokens[i];

  EXPECT_EQ(tokens.at(f.get_u32("tokenizer.ggml.bos_token_id")), "<|endoftext|>");
  EXPECT_EQ(tokens.at(f.get_u32("tokenizer.ggml.eos_token_id")), "<|im_end|>");
  EXPECT_NE(f.get_string("tokenizer.chat_template").find("<|im_start|>"), std::string::npos);
}

TEST_F(SynthModel, SameSeedSameFileWhateverTheThreads) {
  const auto a = dir_ / "a.gguf", b = dir_ / "b.gguf", c = dir_ / "c.gguf";
  ASSERT_EQ(run_tool(kSynth, {"tiny", a.string(), "--seed", "3", "-t", "1"}).exit_code, 0);
  ASSERT_EQ(run_tool(kSynth, {"tiny", b.string(), "--seed", "3", "-t", "2"}).exit_code, 0);
  ASSERT_EQ(run_tool(kSynth, {"tiny", c.string(), "--seed", "4"}).exit_code, 0);
  EXPECT_TRUE(read_file_bytes(a) == read_file_bytes(b));
  const GgufFile fa = GgufFile::open(a), fc = GgufFile::open(c);
  const auto& ta = fa.tensor("blk.0.ffn_up.weight").data;
  const auto& tc = fc.tensor("blk.0.ffn_up.weight").data;
  EXPECT_FALSE(std::equal(ta.begin(), ta.end(), tc.begin(), tc.end()));
}

// A mix written directly must be what lamina-quantize makes of the same
// values: the tool shares its rules and conversion.
TEST_F(SynthModel, QuantizedMixEqualsLaminaQuantizeOfTheSameValues) {
  const auto f32 = dir_ / "f32.gguf", direct = dir_ / "direct.gguf", via = dir_ / "via.gguf";
  ASSERT_EQ(run_tool(kSynth, {"tiny", f32.string(), "--type", "F32"}).exit_code, 0);
  ASSERT_EQ(run_tool(kSynth, {"tiny", direct.string(), "--type", "Q4_K_M"}).exit_code, 0);
  const ToolResult r = run_tool(kQuantize, {f32.string(), via.string(), "Q4_K_M"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const GgufFile d = GgufFile::open(direct), v = GgufFile::open(via);
  EXPECT_EQ(d.get_u32("general.file_type"), 15u);
  ASSERT_EQ(d.tensors().size(), v.tensors().size());
  for (const TensorInfo& t : d.tensors()) {
    SCOPED_TRACE(t.name);
    const TensorInfo& u = v.tensor(t.name);
    EXPECT_EQ(gguf::tensor_type_name(t.type), gguf::tensor_type_name(u.type));
    EXPECT_TRUE(std::equal(t.data.begin(), t.data.end(), u.data.begin(), u.data.end()));
  }
  // Q4_K_M over two layers: layer 1 is a more-bits layer for attn_v and
  // ffn_down, and the tied embedding takes the output's Q6_K.
  EXPECT_EQ(d.tensor("token_embd.weight").type, TensorType::Q6_K);
  EXPECT_EQ(d.tensor("blk.0.attn_v.weight").type, TensorType::Q4_K);
  EXPECT_EQ(d.tensor("blk.1.attn_v.weight").type, TensorType::Q6_K);
  EXPECT_EQ(d.tensor("blk.0.ffn_down.weight").type, TensorType::Q4_K);
  EXPECT_EQ(d.tensor("blk.1.ffn_down.weight").type, TensorType::Q6_K);
  EXPECT_EQ(d.tensor("blk.1.attn_q.bias").type, TensorType::F32);
}

TEST_F(SynthModel, UntiedLlamaPresetHasAnOutputAndNoBiases) {
  const GgufFile f =
      write_preset(dir_, "l.gguf", {"tiny-llama", (dir_ / "l.gguf").string(), "--type", "Q8_0"});
  EXPECT_EQ(f.architecture(), "llama");
  EXPECT_EQ(f.get_u32("general.file_type"), 7u);
  const TensorInfo& out = f.tensor("output.weight");
  EXPECT_EQ(out.ne[0], 256u);
  EXPECT_EQ(out.ne[1], 1024u);
  EXPECT_EQ(out.type, TensorType::Q8_0);
  EXPECT_EQ(f.find_tensor("blk.0.attn_q.bias"), nullptr);
  EXPECT_EQ(f.tensor("blk.1.ffn_down.weight").ne[0], 768u);
}

TEST_F(SynthModel, BadArgumentsFail) {
  ToolResult r = run_tool(kSynth, {"qwen9-1t", (dir_ / "x.gguf").string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("unknown preset"), std::string::npos) << r.output;
  r = run_tool(kSynth, {"tiny", (dir_ / "x.gguf").string(), "--type", "Q9"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("unknown type"), std::string::npos) << r.output;
  EXPECT_TRUE(dir_.entries().empty());
}

}  // namespace
}  // namespace lamina::apps_test
