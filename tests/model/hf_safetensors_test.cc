// The safetensors reader on hand-built files: well-formed ones read back
// exactly, and every kind of damage is refused with a message naming the file
// and tensor, never a crash.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hf/safetensors.h"
#include "lamina/model/config.h"
#include "lamina/model/hf_model.h"

namespace lamina::model::hf {
namespace {

std::vector<std::byte> file_with_header(const std::string& header, std::size_t data_bytes,
                                        uint64_t declared_length = ~uint64_t{0}) {
  const uint64_t n = declared_length == ~uint64_t{0} ? header.size() : declared_length;
  std::vector<std::byte> out(8 + header.size() + data_bytes);
  for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<std::byte>((n >> (8 * i)) & 0xFF);
  std::memcpy(out.data() + 8, header.data(), header.size());
  for (std::size_t i = 0; i < data_bytes; ++i) out[8 + header.size() + i] = static_cast<std::byte>(i);
  return out;
}

std::string error_of(const std::vector<std::byte>& bytes) {
  try {
    parse_safetensors(bytes, "bad.safetensors");
  } catch (const SafetensorsError& e) {
    return e.what();
  }
  return "(accepted)";
}

const std::string kTwoTensors =
    R"({"__metadata__":{"format":"pt"},)"
    R"("b":{"dtype":"BF16","shape":[2,3],"data_offsets":[16,28]},)"
    R"("a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})";

TEST(Safetensors, ReadsTensorsInDataOrder) {
  const auto bytes = file_with_header(kTwoTensors, 28);
  const SafetensorsFile f = parse_safetensors(bytes, "ok.safetensors");
  ASSERT_EQ(f.tensors.size(), 2u);
  EXPECT_EQ(f.tensors[0].name, "a");
  EXPECT_EQ(f.tensors[0].dtype, Dtype::F32);
  EXPECT_EQ(f.tensors[0].shape, (std::vector<uint64_t>{4}));
  EXPECT_EQ(f.tensors[0].data.data(), bytes.data() + 8 + kTwoTensors.size());
  EXPECT_EQ(f.tensors[1].name, "b");
  EXPECT_EQ(f.tensors[1].dtype, Dtype::BF16);
  EXPECT_EQ(f.tensors[1].shape, (std::vector<uint64_t>{2, 3}));
  EXPECT_EQ(f.tensors[1].data.size(), 12u);
  EXPECT_EQ(f.metadata.at("format"), "pt");
}

TEST(Safetensors, AcceptsHeaderPaddedWithSpaces) {
  const auto bytes = file_with_header(R"({"a":{"dtype":"F16","shape":[1],"data_offsets":[0,2]}}   )", 2);
  EXPECT_EQ(parse_safetensors(bytes, "ok.safetensors").tensors.size(), 1u);
}

TEST(Safetensors, RejectsDamage) {
  const struct {
    const char* what;
    std::vector<std::byte> bytes;
    const char* message;
  } cases[] = {
      {"shorter than the length field", std::vector<std::byte>(5), "too small"},
      {"truncated header", file_with_header(kTwoTensors, 0, kTwoTensors.size() + 100), "runs past the end"},
      {"huge header length", file_with_header(kTwoTensors, 28, uint64_t{1} << 62), "runs past the end"},
      {"header not JSON", file_with_header("{\"a\": [", 0), "not valid JSON"},
      {"header not an object", file_with_header("[1, 2]", 0), "does not start with '{'"},
      {"offsets out of range", file_with_header(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8),
       "tensor 'w': data_offsets [0, 16) run past the data section"},
      {"offsets reversed", file_with_header(R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[4,0]}})", 8),
       "tensor 'w': data_offsets [4, 0) is reversed"},
      {"size does not match the shape",
       file_with_header(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}})", 16),
       "tensor 'w': data_offsets cover 16 bytes, its F32 shape needs 12"},
      {"overlapping tensors",
       file_with_header(R"({"x":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                        R"("y":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})",
                        16),
       "tensor 'y' overlaps the data of tensor 'x'"},
      {"unsupported dtype", file_with_header(R"({"w":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})", 8),
       "tensor 'w': dtype I64 is not supported"},
      {"unknown dtype", file_with_header(R"({"w":{"dtype":"Q4","shape":[1],"data_offsets":[0,8]}})", 8),
       "tensor 'w': unknown dtype 'Q4'"},
      {"negative dimension", file_with_header(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4),
       "tensor 'w': a shape dimension is not a non-negative integer"},
      {"overflowing shape",
       file_with_header(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})", 4),
       "tensor 'w': the shape's byte size overflows"},
      {"missing field", file_with_header(R"({"w":{"dtype":"F32","shape":[1]}})", 4), "tensor 'w': missing 'data_offsets'"},
      {"duplicate tensor",
       file_with_header(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                        R"("w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                        8),
       "has the key 'w' twice"},
      {"metadata not strings", file_with_header(R"({"__metadata__":{"format":1}})", 0),
       "__metadata__ entry 'format' is not a string"},
      {"deep nesting", file_with_header("{\"a\":" + std::string(40, '[') + std::string(40, ']') + "}", 0),
       "nests deeper than"},
  };
  for (const auto& c : cases) {
    const std::string message = error_of(c.bytes);
    EXPECT_NE(message.find("bad.safetensors: "), std::string::npos) << c.what << ": " << message;
    EXPECT_NE(message.find(c.message), std::string::npos) << c.what << ": " << message;
  }
}

TEST(SafetensorsIndex, ReadsTheWeightMapAndRejectsPaths) {
  const auto map = parse_safetensors_index(R"({"metadata":{},"weight_map":{"a":"m-1.safetensors","b":"m-2.safetensors"}})",
                                           "index.json");
  EXPECT_EQ(map.at("b"), "m-2.safetensors");
  for (const char* bad : {R"({"weight_map":{"a":"../secret"}})", R"({"weight_map":{"a":"/etc/passwd"}})",
                          R"({"weight_map":{}})", R"({"weight_map":{"a":3}})", R"({"metadata":{}})"}) {
    EXPECT_THROW(parse_safetensors_index(bad, "index.json"), SafetensorsError) << bad;
  }
}

// A model folder whose weights are damaged: loading names the shard file.
TEST(HfFolder, DamagedShardIsReportedWithItsFile) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(testing::TempDir()) / "lamina_hf_damaged";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << R"({"architectures":["LlamaForCausalLM"],"hidden_size":64,)"
                                        R"("num_hidden_layers":1,"num_attention_heads":2,"vocab_size":8,)"
                                        R"("intermediate_size":128,"rms_norm_eps":1e-5})";
  const auto bytes = file_with_header(R"({"model.embed_tokens.weight":{"dtype":"F32","shape":[8,64],)"
                                      R"("data_offsets":[0,2048]}})",
                                      100);
  std::ofstream(dir / "model.safetensors", std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  try {
    load_hf_model(dir);
    FAIL() << "a truncated checkpoint was accepted";
  } catch (const ModelError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find((dir / "model.safetensors").string()), std::string::npos) << message;
    EXPECT_NE(message.find("tensor 'model.embed_tokens.weight'"), std::string::npos) << message;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace lamina::model::hf
