// Real files cut short at many offsets: every cut before the end of the last
// tensor's data must be an error (never a crash), with an offset no later
// than the cut; a cut inside the trailing padding still parses.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <set>
#include <string>

#include "gguf_layout.h"
#include "lamina/gguf/file.h"
#include "test_support.h"

namespace lamina::gguf {
namespace {

using testing::FileLayout;

// One past the last byte the reader needs: the end of the last tensor's data,
// or the end of the tensor infos in a file without tensors.
uint64_t required_end(const FileLayout& layout) {
  uint64_t end = layout.infos_end;
  for (const auto& t : layout.tensors) {
    const auto* traits = tensor_type_traits(t.type);
    uint64_t n = 1;
    for (uint64_t d : t.ne) n *= d;
    end = std::max(end, layout.data_offset + t.offset + n / traits->block_size * traits->type_size);
  }
  return end;
}

// Every field boundary of the layout, where off-by-one mistakes live.
std::set<uint64_t> field_boundaries(const FileLayout& layout) {
  std::set<uint64_t> at = {0, 4, 8, 16, 24, layout.infos_end, layout.data_offset};
  for (const auto& kv : layout.kvs) {
    for (uint64_t p : {kv.start, kv.start + 8, kv.type_pos, kv.value_pos, kv.end}) at.insert(p);
    if (kv.type == 9) at.insert({kv.count_pos, kv.count_pos + 8});
  }
  for (const auto& t : layout.tensors) {
    for (uint64_t p : {t.start, t.start + 8, t.n_dims_pos, t.type_pos, t.offset_pos, t.end})
      at.insert(p);
    for (uint64_t p : t.dim_pos) at.insert(p);
    at.insert(layout.data_offset + t.offset);
  }
  return at;
}

std::optional<GgufError> parse_in_place(std::span<const std::byte> bytes) {
  try {
    (void)GgufFile::parse(bytes);
  } catch (const GgufError& e) {
    return e;
  }
  return std::nullopt;
}

// Cuts `bytes` at each offset in `cuts` and checks the outcome.
void check_cuts(const std::string& file, const std::set<uint64_t>& cuts) {
  SCOPED_TRACE(file);
  const auto& bytes = testing::testdata_bytes(file);
  ASSERT_FALSE(bytes.empty());
  const auto layout = testing::walk_layout(bytes);
  const uint64_t needed = required_end(layout);
  ASSERT_LE(needed, bytes.size());
  std::size_t errors = 0;
  for (uint64_t cut : cuts) {
    if (cut >= bytes.size()) continue;
    // Cuts inside the metadata parse an exact-size copy so AddressSanitizer
    // sees any over-read; the reader never reads tensor data, so cuts in the
    // data section can parse in place (copying megabytes per cut is slow).
    const auto prefix = std::span(bytes).first(cut);
    const auto error =
        cut <= layout.data_offset ? testing::parse_error(prefix) : parse_in_place(prefix);
    if (cut < needed) {
      ASSERT_TRUE(error.has_value()) << "cut at " << cut << " parsed without error";
      ++errors;
      EXPECT_LE(error->offset(), cut) << "cut at " << cut << ": " << error->what();
      EXPECT_NE(std::string(error->what()).find("offset " + std::to_string(error->offset())),
                std::string::npos)
          << error->what();
    } else {
      EXPECT_FALSE(error.has_value())
          << "cut at " << cut << " in the trailing padding: " << error->what();
    }
  }
  EXPECT_GT(errors, 0u);
}

std::set<uint64_t> every_offset(uint64_t begin, uint64_t end) {
  std::set<uint64_t> cuts;
  for (uint64_t i = begin; i < end; ++i) cuts.insert(i);
  return cuts;
}

// Every offset up to the data section, plus evenly spaced cuts through the
// data and the tensor boundaries.
std::set<uint64_t> dense_header_cuts(const std::string& file, uint64_t data_samples) {
  const auto& bytes = testing::testdata_bytes(file);
  const auto layout = testing::walk_layout(bytes);
  auto cuts = every_offset(0, layout.data_offset + 1);
  for (uint64_t i = 0; i <= data_samples; ++i)
    cuts.insert(layout.data_offset + (bytes.size() - layout.data_offset) * i / (data_samples + 1));
  for (uint64_t b : field_boundaries(layout))
    for (uint64_t d : {b - 1, b, b + 1}) cuts.insert(d);
  for (uint64_t tail = 1; tail <= 64; ++tail) cuts.insert(bytes.size() - tail);
  return cuts;
}

// For files whose metadata is too large to cut at every byte: the first 4 KiB
// densely, every boundary, one cut every `stride` bytes elsewhere and each of
// the last `tail` bytes.
std::set<uint64_t> sampled_cuts(const std::string& file, uint64_t stride, uint64_t tail) {
  const auto& bytes = testing::testdata_bytes(file);
  const auto layout = testing::walk_layout(bytes);
  auto cuts = every_offset(0, 4096);
  for (uint64_t b : field_boundaries(layout))
    for (uint64_t d : {b - 1, b, b + 1}) cuts.insert(d);
  for (uint64_t at = 4096; at < bytes.size(); at += stride) cuts.insert(at);
  for (uint64_t back = 1; back <= tail; ++back) cuts.insert(bytes.size() - back);
  return cuts;
}

TEST(Truncation, QuantFileAtEveryHeaderByte) {
  LAMINA_REQUIRE_TESTDATA();
  check_cuts("quant/q8_k.gguf", dense_header_cuts("quant/q8_k.gguf", 256));
  check_cuts("quant/dot_q4_1.gguf", dense_header_cuts("quant/dot_q4_1.gguf", 256));
}

TEST(Truncation, Stories260KAtEveryHeaderByte) {
  LAMINA_REQUIRE_TESTDATA();
  check_cuts("models/stories260K.gguf", dense_header_cuts("models/stories260K.gguf", 256));
}

TEST(Truncation, TinyStoriesQ8_0Sampled) {
  LAMINA_REQUIRE_TESTDATA();
  // Its metadata is large: around every field boundary, a stride elsewhere.
  const std::string file = "models/TinyStories-656K-Q8_0.gguf";
  check_cuts(file, sampled_cuts(file, 997, 64));
}

TEST(Truncation, VocabFileSampled) {
  LAMINA_REQUIRE_TESTDATA();
  // No tensors: the file ends with the last metadata value, so every cut fails.
  check_cuts("vocab/ggml-vocab-llama-spm.gguf",
             sampled_cuts("vocab/ggml-vocab-llama-spm.gguf", 16381, 4));
}

TEST(Truncation, ArchFileSampled) {
  LAMINA_REQUIRE_TESTDATA();
  check_cuts("archs/qwen3moe.q4_k_m.gguf", sampled_cuts("archs/qwen3moe.q4_k_m.gguf", 1021, 64));
}

TEST(Truncation, TruncatedFileOnDisk) {
  LAMINA_REQUIRE_TESTDATA();
  const auto& bytes = testing::testdata_bytes("models/stories260K.gguf");
  const auto dir = testing::make_temp_dir("gguf_truncated");
  for (uint64_t cut : {uint64_t{0}, uint64_t{3}, uint64_t{100}, uint64_t{bytes.size() - 1}}) {
    const auto path = dir / ("cut" + std::to_string(cut) + ".gguf");
    {
      std::ofstream out(path, std::ios::binary);
      out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(cut));
    }
    try {
      (void)GgufFile::open(path);
      ADD_FAILURE() << "cut at " << cut << " opened without error";
    } catch (const GgufError& e) {
      EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
      EXPECT_LE(e.offset(), cut);
    }
  }
  std::filesystem::remove_all(dir);
}

TEST(Truncation, UnopenablePaths) {
  const auto dir = testing::make_temp_dir("gguf_unopenable");
  for (const auto& path : {dir / "does-not-exist.gguf", dir}) {
    try {
      (void)GgufFile::open(path);
      ADD_FAILURE() << path << " opened without error";
    } catch (const GgufError& e) {
      EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
    }
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace lamina::gguf
