// lamina-quantize end to end: every mix of stories260K read back and checked
// tensor by tensor, the llama-quantize files of testdata/archs reproduced
// byte for byte, and the errors a user can run into.
#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "lamina/gguf/file.h"
#include "lamina/gguf/writer.h"
#include "lamina/quant/format.h"
#include "lamina/quant/reference.h"
#include "tool_runner.h"

namespace lamina::apps_test {
namespace {

using gguf::GgufFile;
using gguf::TensorInfo;
using gguf::TensorType;
using T = TensorType;

const std::string kQuantize = LAMINA_QUANTIZE_EXE;
const std::filesystem::path kStories = LAMINA_STORIES_MODEL;

struct Mix {
  const char* name;
  uint32_t file_type;  // llama.cpp's llama_ftype
};

constexpr Mix kMixes[] = {
    {"Q4_0", 2},    {"Q4_1", 3},    {"Q5_0", 8},    {"Q5_1", 9},    {"Q8_0", 7},
    {"Q2_K", 10},   {"Q3_K_S", 11}, {"Q3_K_M", 12}, {"Q3_K_L", 13}, {"Q4_K_S", 14},
    {"Q4_K_M", 15}, {"Q5_K_S", 16}, {"Q5_K_M", 17}, {"Q6_K", 18},   {"IQ4_NL", 25},
    {"IQ4_XS", 30}, {"F16", 1},     {"BF16", 32},   {"F32", 0},
};
// MXFP4_MOE (38) is checked on gpt-oss below: stories260K has no experts.

std::string mix_name(const Mix& mix) { return mix.name; }

// The type llama-quantize's rules give each stories260K tensor, worked out by
// hand for this model: 5 layers, 8 heads over 4 KV heads (so the rules for 4+
// heads per KV head never apply), an untied output, rows of 64 values
// (ffn_down: 172). A 256-block type never fits a row of 64 and falls back:
// Q2_K/Q3_K -> Q4_0, Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0,
// IQ4_XS -> IQ4_NL; and 172 fits no block at all, so ffn_down is F16.
TensorType expected_stories_type(const std::string& mix, const std::string& name, int layer) {
  const bool one_dim = name.find("_norm.") != std::string::npos;
  if (one_dim) return T::F32;
  if (mix == "F16") return T::F16;
  if (mix == "BF16") return T::BF16;
  if (mix == "F32") return T::F32;
  if (name.find("ffn_down") != std::string::npos) return T::F16;
  // output.weight: Q8_0 when the row does not fit the mix's block, else Q6_K,
  // which for rows of 64 falls back to Q8_0 as well.
  if (name == "output.weight") return T::Q8_0;

  // The mix's base type after the fallback.
  const std::map<std::string, TensorType> base = {
      {"Q4_0", T::Q4_0},   {"Q4_1", T::Q4_1},   {"Q5_0", T::Q5_0},   {"Q5_1", T::Q5_1},
      {"Q8_0", T::Q8_0},   {"Q2_K", T::Q4_0},   {"Q3_K_S", T::Q4_0}, {"Q3_K_M", T::Q4_0},
      {"Q3_K_L", T::Q4_0}, {"Q4_K_S", T::Q5_0}, {"Q4_K_M", T::Q5_0}, {"Q5_K_S", T::Q5_1},
      {"Q5_K_M", T::Q5_1}, {"Q6_K", T::Q8_0},   {"IQ4_NL", T::IQ4_NL}, {"IQ4_XS", T::IQ4_NL},
  };
  if (name.find("attn_output") != std::string::npos) {
    if (mix == "Q2_K") return T::Q4_0;    // Q3_K
    if (mix == "Q3_K_M") return T::Q5_0;  // Q4_K
    if (mix == "Q3_K_L") return T::Q5_1;  // Q5_K
  }
  if (name.find("attn_v") != std::string::npos) {
    // use_more_bits over 5 layers: layers 2 and 4.
    const bool more_bits = layer == 2 || layer == 4;
    if (mix == "Q2_K") return T::Q4_0;                        // Q3_K
    if (mix == "Q3_K_M") return layer < 2 ? T::Q5_1 : T::Q5_0;  // Q5_K / Q4_K
    if (mix == "Q3_K_L") return T::Q5_1;                      // Q5_K
    if ((mix == "Q4_K_M" || mix == "Q5_K_M") && more_bits) return T::Q8_0;  // Q6_K
    if (mix == "Q4_K_S" && layer < 4) return T::Q5_1;                       // Q5_K
  }
  return base.at(mix);
}

int layer_of(const std::string& name) {
  return name.rfind("blk.", 0) == 0 ? std::stoi(name.substr(4)) : -1;
}

std::vector<float> dequantized(const TensorInfo& t) {
  const auto format = quant::format_from_id(static_cast<uint32_t>(t.type));
  EXPECT_TRUE(format.has_value()) << t.name;
  std::vector<float> values(t.n_elements);
  for (uint64_t r = 0; r < t.n_rows(); ++r) {
    quant::dequantize_row_ref(*format, t.data.data() + r * t.row_bytes(),
                              values.data() + r * t.ne[0], t.ne[0]);
  }
  return values;
}

// RMS error relative to the tensor's RMS that each type must stay within on
// these weights (about twice what the type's step size gives).
double error_bound(TensorType type) {
  switch (type) {
    case T::F32: return 0.0;
    case T::F16: return 1e-3;
    case T::BF16: return 5e-3;
    case T::Q8_0: return 0.01;
    case T::Q5_0:
    case T::Q5_1: return 0.06;
    case T::Q4_0:
    case T::Q4_1:
    case T::IQ4_NL: return 0.12;
    default: ADD_FAILURE() << "no bound for " << gguf::tensor_type_name(type); return 0.0;
  }
}

class StoriesMix : public ::testing::TestWithParam<Mix> {
 protected:
  static const GgufFile& original() {
    static const GgufFile file = GgufFile::open(kStories);
    return file;
  }
};

TEST_P(StoriesMix, TypesMetadataAndValuesFollowTheMix) {
  const Mix mix = GetParam();
  ScratchDir dir(std::string("stories_") + mix.name);
  const auto out = dir / "out.gguf";
  const ToolResult r = run_tool(kQuantize, {kStories.string(), out.string(), mix.name});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("[  48/  48]"), std::string::npos) << "one progress line per tensor";
  const GgufFile& in = original();
  const GgufFile q = GgufFile::open(out);

  // Metadata: every key kept, in order; file type and quantization version last.
  const std::size_t kept = in.metadata().size() - (in.contains("general.file_type") ? 1 : 0);
  ASSERT_EQ(q.metadata().size(), kept + 2);
  std::size_t k = 0;
  for (const auto& kv : in.metadata()) {
    if (kv.key == "general.file_type") continue;
    EXPECT_EQ(q.metadata()[k].key, kv.key);
    EXPECT_TRUE(q.metadata()[k].value == kv.value) << kv.key;
    ++k;
  }
  EXPECT_EQ(q.metadata()[k].key, "general.quantization_version");
  EXPECT_EQ(q.get_u32("general.quantization_version"), 2u);
  EXPECT_EQ(q.metadata()[k + 1].key, "general.file_type");
  EXPECT_EQ(q.get_u32("general.file_type"), mix.file_type);

  ASSERT_EQ(q.tensors().size(), in.tensors().size());
  for (const TensorInfo& t : in.tensors()) {
    SCOPED_TRACE(t.name);
    const TensorInfo& qt = q.tensor(t.name);
    ASSERT_EQ(qt.n_dims, t.n_dims);
    EXPECT_EQ(qt.ne, t.ne);
    const TensorType want = expected_stories_type(mix.name, t.name, layer_of(t.name));
    ASSERT_EQ(gguf::tensor_type_name(qt.type), gguf::tensor_type_name(want));

    // The bytes are the reference quantizer's, row by row.
    const auto format = *quant::format_from_id(static_cast<uint32_t>(qt.type));
    const auto* src = reinterpret_cast<const float*>(t.data.data());
    std::vector<std::byte> row(qt.row_bytes());
    for (uint64_t r = 0; r < t.n_rows(); ++r) {
      quant::quantize_row_ref(format, src + r * t.ne[0], row.data(), t.ne[0]);
      ASSERT_EQ(std::memcmp(row.data(), qt.data.data() + r * qt.row_bytes(), row.size()), 0)
          << "row " << r;
    }

    // And they stand for values close to the original.
    const std::vector<float> values = dequantized(qt);
    double err = 0.0, ref = 0.0;
    for (uint64_t i = 0; i < t.n_elements; ++i) {
      err += (values[i] - src[i]) * double(values[i] - src[i]);
      ref += src[i] * double(src[i]);
    }
    EXPECT_LE(std::sqrt(err / ref), error_bound(qt.type));
  }
}

INSTANTIATE_TEST_SUITE_P(AllMixes, StoriesMix, ::testing::ValuesIn(kMixes),
                         [](const auto& info) { return mix_name(info.param); });

TEST(QuantizeOptions, PureGivesEveryQuantizedTensorTheBaseType) {
  ScratchDir dir("pure");
  const auto out = dir / "pure.gguf";
  const ToolResult r = run_tool(kQuantize, {kStories.string(), out.string(), "Q4_K_M", "--pure"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const GgufFile q = GgufFile::open(out);
  for (const TensorInfo& t : q.tensors()) {
    SCOPED_TRACE(t.name);
    if (t.name.find("_norm.") != std::string::npos) {
      EXPECT_EQ(t.type, T::F32);
    } else if (t.name.find("ffn_down") != std::string::npos) {
      EXPECT_EQ(t.type, T::F16);  // rows of 172 fit no block
    } else {
      EXPECT_EQ(t.type, T::Q5_0);  // Q4_K, fallen back for rows of 64
    }
  }
}

TEST(QuantizeOptions, ExplicitOutputAndEmbeddingTypes) {
  ScratchDir dir("explicit");
  const auto out = dir / "x.gguf";
  const ToolResult r =
      run_tool(kQuantize, {kStories.string(), out.string(), "Q4_0", "--output-tensor-type", "f16",
                           "--token-embedding-type", "Q8_0"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const GgufFile q = GgufFile::open(out);
  EXPECT_EQ(q.tensor("output.weight").type, T::F16);
  EXPECT_EQ(q.tensor("token_embd.weight").type, T::Q8_0);
  EXPECT_EQ(q.tensor("blk.0.attn_q.weight").type, T::Q4_0);
}

TEST(QuantizeOptions, ThreadCountDoesNotChangeTheFile) {
  ScratchDir dir("threads");
  const auto one = dir / "one.gguf";
  const auto two = dir / "two.gguf";
  ASSERT_EQ(run_tool(kQuantize, {kStories.string(), one.string(), "Q5_K_M", "-t", "1"}).exit_code, 0);
  ASSERT_EQ(run_tool(kQuantize, {kStories.string(), two.string(), "Q5_K_M", "-t", "3"}).exit_code, 0);
  EXPECT_EQ(read_file_bytes(one), read_file_bytes(two));
}

// testdata/archs holds llama-quantize's Q8_0 and Q4_K_M files of each f32
// model: ours must be the same files, type table and bytes.
class LlamaQuantizeFiles
    : public ::testing::TestWithParam<std::tuple<const char*, const char*>> {};

TEST_P(LlamaQuantizeFiles, AreReproducedByteForByte) {
  const auto data = testdata_dir();
  if (data.empty()) GTEST_SKIP() << "test data folder not found (LAMINA_TESTDATA_DIR)";
  const auto [arch, type] = GetParam();
  const auto input = data / "archs" / (std::string(arch) + ".f32.gguf");
  const auto reference = data / "archs" / (std::string(arch) + "." + type + ".gguf");
  ScratchDir dir(std::string("archs_") + arch + "_" + type);
  const auto out = dir / "out.gguf";
  const ToolResult r = run_tool(kQuantize, {input.string(), out.string(), type});
  ASSERT_EQ(r.exit_code, 0) << r.output;

  const GgufFile ours = GgufFile::open(out);
  const GgufFile theirs = GgufFile::open(reference);
  ASSERT_EQ(ours.tensors().size(), theirs.tensors().size());
  for (std::size_t i = 0; i < theirs.tensors().size(); ++i) {
    const TensorInfo& a = ours.tensors()[i];
    const TensorInfo& b = theirs.tensors()[i];
    ASSERT_EQ(a.name, b.name) << "tensor order differs at " << i;
    EXPECT_EQ(gguf::tensor_type_name(a.type), gguf::tensor_type_name(b.type)) << a.name;
    EXPECT_TRUE(std::equal(a.data.begin(), a.data.end(), b.data.begin(), b.data.end())) << a.name;
  }
  EXPECT_TRUE(read_file_bytes(out) == read_file_bytes(reference)) << "files differ";
}

INSTANTIATE_TEST_SUITE_P(
    Archs, LlamaQuantizeFiles,
    ::testing::Combine(::testing::Values("llama", "llama3", "qwen2", "qwen3", "phi3", "gpt2",
                                         "gemma2", "qwen3moe"),
                       ::testing::Values("q8_0", "q4_k_m")),
    [](const auto& info) {
      return std::string(std::get<0>(info.param)) + "_" + std::get<1>(info.param);
    });

// gpt-oss as archs/README.md ships it: Q8_0, and MXFP4_MOE (MXFP4 experts,
// everything else Q8_0).
INSTANTIATE_TEST_SUITE_P(
    GptOss, LlamaQuantizeFiles,
    ::testing::Combine(::testing::Values("gptoss"), ::testing::Values("q8_0", "mxfp4_moe")),
    [](const auto& info) {
      return std::string(std::get<0>(info.param)) + "_" + std::get<1>(info.param);
    });

// Each error: exit status 1, a message naming the problem, and no file left.
class QuantizeErrors : public ::testing::Test {
 protected:
  void expect_failure(const std::vector<std::string>& args, const std::string& message) {
    const ToolResult r = run_tool(kQuantize, args);
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << r.output;
  }
  ScratchDir dir_{"errors"};
};

TEST_F(QuantizeErrors, UnknownType) {
  expect_failure({kStories.string(), (dir_ / "o.gguf").string(), "Q4_K_X"}, "unknown type 'Q4_K_X'");
  expect_failure({kStories.string(), (dir_ / "o.gguf").string(), "Q4_0", "--output-tensor-type",
                  "IQ2_XXS"},
                 "not a tensor type lamina can write");
  EXPECT_TRUE(dir_.entries().empty());
}

TEST_F(QuantizeErrors, OutputIsTheInput) {
  const auto copy = dir_ / "model.gguf";
  std::filesystem::copy_file(kStories, copy);
  const auto before = read_file_bytes(copy);
  expect_failure({copy.string(), copy.string(), "Q8_0"}, "would overwrite the input");
  // The same file by another spelling.
  expect_failure({copy.string(), (dir_.path() / "." / "model.gguf").string(), "Q8_0"},
                 "would overwrite the input");
  EXPECT_EQ(read_file_bytes(copy), before);
  EXPECT_EQ(dir_.entries(), std::vector<std::string>{"model.gguf"});
}

TEST_F(QuantizeErrors, MissingAndTruncatedInput) {
  expect_failure({(dir_ / "absent.gguf").string(), (dir_ / "o.gguf").string(), "Q8_0"},
                 "absent.gguf");
  const auto bytes = read_file_bytes(kStories);
  const auto cut = dir_ / "cut.gguf";
  {
    std::ofstream f(cut, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size() / 2));
  }
  expect_failure({cut.string(), (dir_ / "o.gguf").string(), "Q8_0"}, "cut.gguf");
  EXPECT_EQ(dir_.entries(), std::vector<std::string>{"cut.gguf"});
}

TEST_F(QuantizeErrors, QuantizedInputIsNotRequantized) {
  // A Q8_0 tensor among F32 ones: converting it to Q4_0 would round twice.
  const GgufFile in = GgufFile::open(kStories);
  gguf::GgufWriter w;
  w.copy_metadata_from(in);
  for (const TensorInfo& t : in.tensors()) {
    if (t.name != "blk.0.attn_q.weight") {
      w.add_tensor_view(t.name, t.type, t.shape(), t.data);
      continue;
    }
    std::vector<std::byte> q(quant::row_bytes(quant::QuantFormat::Q8_0, t.ne[0]) * t.n_rows());
    const auto* src = reinterpret_cast<const float*>(t.data.data());
    const uint64_t stride = q.size() / t.n_rows();
    for (uint64_t r = 0; r < t.n_rows(); ++r)
      quant::quantize_row_ref(quant::QuantFormat::Q8_0, src + r * t.ne[0], q.data() + r * stride,
                              t.ne[0]);
    w.add_tensor(t.name, T::Q8_0, t.shape(), q);
  }
  const auto mixed = dir_ / "mixed.gguf";
  w.write_file(mixed);
  expect_failure({mixed.string(), (dir_ / "o.gguf").string(), "Q4_0"},
                 "tensor 'blk.0.attn_q.weight' is stored as Q8_0");
  EXPECT_EQ(dir_.entries(), std::vector<std::string>{"mixed.gguf"});
}

TEST_F(QuantizeErrors, OutputFolderMissing) {
  expect_failure({kStories.string(), (dir_ / "no" / "such" / "o.gguf").string(), "Q8_0"},
                 "cannot create");
  EXPECT_TRUE(dir_.entries().empty());
}

}  // namespace
}  // namespace lamina::apps_test
