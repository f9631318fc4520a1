// GgufFile::assemble: a file built in memory from views is checked like a
// parsed one, reads back through the same accessors, and writes out to a file
// that parses to the same contents.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "lamina/gguf/file.h"
#include "lamina/gguf/writer.h"

namespace lamina::gguf {
namespace {

struct Parts {
  std::vector<KeyValue> metadata;
  std::vector<TensorInfo> tensors;
  std::shared_ptr<std::vector<float>> storage = std::make_shared<std::vector<float>>(64);
};

TensorInfo view(const std::string& name, std::vector<uint64_t> shape, std::span<const float> data) {
  TensorInfo t;
  t.name = name;
  t.n_dims = static_cast<uint32_t>(shape.size());
  for (std::size_t d = 0; d < shape.size(); ++d) t.ne[d] = shape[d];
  t.type = TensorType::F32;
  t.data = std::as_bytes(data);
  return t;
}

Parts valid_parts() {
  Parts p;
  for (std::size_t i = 0; i < p.storage->size(); ++i) (*p.storage)[i] = static_cast<float>(i);
  p.metadata.push_back({"general.architecture", Value::string("llama"), 0});
  p.metadata.push_back({"llama.block_count", Value::u32(1), 0});
  const std::span<const float> all(*p.storage);
  p.tensors.push_back(view("a.weight", {4, 2}, all.subspan(0, 8)));
  p.tensors.push_back(view("b.weight", {3}, all.subspan(8, 3)));
  return p;
}

std::string assemble_error(Parts p) {
  try {
    GgufFile::assemble(std::move(p.metadata), std::move(p.tensors), p.storage);
  } catch (const GgufError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(Assemble, ReadsBackThroughTheAccessors) {
  Parts p = valid_parts();
  const std::byte* b_data = p.tensors[1].data.data();
  std::weak_ptr<std::vector<float>> storage = p.storage;
  GgufFile f = GgufFile::assemble(std::move(p.metadata), std::move(p.tensors), std::move(p.storage));
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.architecture(), "llama");
  EXPECT_EQ(f.get_u32("llama.block_count"), 1u);
  const TensorInfo& a = f.tensor("a.weight");
  EXPECT_EQ(a.n_elements, 8u);
  EXPECT_EQ(a.n_bytes, 32u);
  EXPECT_EQ(a.offset, 0u);
  EXPECT_EQ(f.tensor("b.weight").offset, 32u);  // aligned to 32
  EXPECT_EQ(f.tensor("b.weight").data.data(), b_data);
  EXPECT_TRUE(f.bytes().empty());
  // The file keeps the views' storage alive, also after a move.
  GgufFile moved = std::move(f);
  EXPECT_FALSE(storage.expired());
  EXPECT_EQ(moved.tensor("b.weight").data.data(), b_data);
}

TEST(Assemble, WritesAFileThatParsesTheSame) {
  Parts p = valid_parts();
  const GgufFile f = GgufFile::assemble(std::move(p.metadata), std::move(p.tensors), std::move(p.storage));
  GgufWriter w;
  w.copy_metadata_from(f);
  for (const auto& t : f.tensors()) w.add_tensor_view(t.name, t.type, t.shape(), t.data);
  const std::vector<std::byte> bytes = w.to_bytes();
  const GgufFile back = GgufFile::parse(bytes);
  ASSERT_EQ(back.tensors().size(), 2u);
  for (const auto& t : f.tensors()) {
    const TensorInfo& b = back.tensor(t.name);
    ASSERT_EQ(b.n_bytes, t.n_bytes);
    EXPECT_EQ(std::memcmp(b.data.data(), t.data.data(), t.n_bytes), 0) << t.name;
  }
  EXPECT_TRUE(back.at("llama.block_count") == f.at("llama.block_count"));
}

TEST(Assemble, RejectsWhatAParsedFileCouldNotHold) {
  const struct {
    const char* what;
    void (*damage)(Parts&);
    const char* message;
  } cases[] = {
      {"duplicate key", [](Parts& p) { p.metadata.push_back(p.metadata[0]); },
       "duplicate metadata key 'general.architecture'"},
      {"empty key", [](Parts& p) { p.metadata[1].key.clear(); }, "empty metadata key"},
      {"key not UTF-8", [](Parts& p) { p.metadata[1].key = "bad\xff"; }, "not valid UTF-8"},
      {"bad alignment", [](Parts& p) { p.metadata.push_back({"general.alignment", Value::u32(24), 0}); },
       "not a power of two"},
      {"duplicate tensor", [](Parts& p) { p.tensors.push_back(p.tensors[0]); }, "duplicate tensor name 'a.weight'"},
      {"empty tensor name", [](Parts& p) { p.tensors[0].name.clear(); }, "empty tensor name"},
      {"view too small", [](Parts& p) { p.tensors[0].ne[1] = 3; }, "tensor 'a.weight': its data holds 32 bytes"},
      {"zero dimension", [](Parts& p) { p.tensors[1].ne[0] = 0; }, "tensor 'b.weight': dimension 0 is zero"},
      {"too many dimensions", [](Parts& p) { p.tensors[1].n_dims = 5; }, "n_dims 5 is not in 1..4"},
      {"dimension past n_dims", [](Parts& p) { p.tensors[1].ne[2] = 2; }, "dimension 2 past n_dims is not 1"},
      {"row not a whole block",
       [](Parts& p) { p.tensors[0].type = TensorType::Q8_0; }, "row length 4 is not a multiple of the Q8_0 block size"},
      {"no data", [](Parts& p) { p.tensors[1].data = {}; }, "tensor 'b.weight': its data holds 0 bytes"},
  };
  for (const auto& c : cases) {
    Parts p = valid_parts();
    c.damage(p);
    const std::string message = assemble_error(std::move(p));
    EXPECT_NE(message.find(c.message), std::string::npos) << c.what << ": " << message;
  }
}

}  // namespace
}  // namespace lamina::gguf
