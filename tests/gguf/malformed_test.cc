// Targeted corruptions of real files: each patches one field (found by the
// test-only layout walker) and must end in a GgufError whose message names
// the problem and whose offset lies inside the damaged record.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gguf_layout.h"
#include "lamina/gguf/file.h"
#include "lamina/gguf/writer.h"
#include "test_support.h"

namespace lamina::gguf {
namespace {

using testing::FileLayout;
using testing::poke;

constexpr const char* kStories = "models/stories260K.gguf";
constexpr const char* kTiny = "models/TinyStories-656K-Q8_0.gguf";
constexpr const char* kVocab = "vocab/ggml-vocab-llama-spm.gguf";
constexpr const char* kQuant = "quant/q4_k.gguf";
constexpr const char* kAllSources[] = {kStories, kTiny, kVocab, kQuant};

constexpr uint64_t kHuge = uint64_t{1} << 62;

struct Source {
  std::vector<std::byte> bytes;  // a private copy to patch
  FileLayout layout;
};

Source load(const std::string& file) {
  Source s{testing::testdata_bytes(file), {}};
  s.layout = testing::walk_layout(s.bytes);
  return s;
}

// `bytes` must be rejected with a message containing `what`, at an offset in [lo, hi].
void expect_rejected(std::span<const std::byte> bytes, const std::string& what, uint64_t lo,
                     uint64_t hi) {
  const auto error = testing::parse_error(bytes);
  ASSERT_TRUE(error.has_value()) << "accepted; expected an error naming: " << what;
  const std::string message = error->what();
  EXPECT_NE(message.find(what), std::string::npos) << message;
  EXPECT_GE(error->offset(), lo) << message;
  EXPECT_LE(error->offset(), hi) << message;
  EXPECT_NE(message.find("offset " + std::to_string(error->offset())), std::string::npos)
      << message;
}

void expect_any_error(std::span<const std::byte> bytes) {
  const auto error = testing::parse_error(bytes);
  EXPECT_TRUE(error.has_value()) << "accepted a corrupted file";
}

void patch_text(std::vector<std::byte>& bytes, uint64_t pos, std::string_view text) {
  for (std::size_t i = 0; i < text.size(); ++i) bytes[pos + i] = static_cast<std::byte>(text[i]);
}

TEST(Malformed, Header) {
  LAMINA_REQUIRE_TESTDATA();
  for (const char* file : kAllSources) {
    SCOPED_TRACE(file);
    const Source src = load(file);
    auto patched = [&](uint64_t pos, auto value) {
      auto b = src.bytes;
      poke(b, pos, value);
      return b;
    };
    expect_rejected(patched(0, uint8_t{'X'}), "bad magic", 0, 0);
    expect_rejected(patched(4, uint32_t{1}), "version 1 is not supported", 4, 4);
    expect_rejected(patched(4, uint32_t{0}), "unsupported GGUF version 0", 4, 4);
    expect_rejected(patched(4, uint32_t{4}), "unsupported GGUF version 4", 4, 4);
    expect_rejected(patched(4, uint32_t{0x03000000}), "big-endian", 4, 4);
    expect_rejected(patched(4, uint32_t{0x02000000}), "big-endian", 4, 4);
    expect_rejected(patched(FileLayout::kKvCountPos, kHuge), "metadata count", 16, 16);
    expect_rejected(patched(FileLayout::kKvCountPos, ~uint64_t{0}), "metadata count", 16, 16);
    expect_rejected(patched(FileLayout::kTensorCountPos, kHuge), "tensor count", 8, 8);
    expect_rejected(patched(FileLayout::kTensorCountPos, ~uint64_t{0}), "tensor count", 8, 8);
    // One more pair or tensor than the file holds: the reader runs into other data.
    expect_any_error(patched(FileLayout::kKvCountPos, uint64_t{src.layout.kvs.size() + 1}));
    expect_any_error(patched(FileLayout::kTensorCountPos, uint64_t{src.layout.tensors.size() + 1}));
  }
}

TEST(Malformed, StringLengths) {
  LAMINA_REQUIRE_TESTDATA();
  for (const char* file : kAllSources) {
    SCOPED_TRACE(file);
    const Source src = load(file);
    const auto& first = src.layout.kvs.front();
    const auto& arch = src.layout.kv("general.architecture");
    auto b = src.bytes;
    poke(b, first.start, kHuge);
    expect_rejected(b, "metadata key length", first.start, first.start);
    b = src.bytes;
    poke(b, first.start, uint64_t{b.size()});
    expect_rejected(b, "truncated while reading metadata key", first.start, first.start + 8);
    b = src.bytes;
    poke(b, first.start, uint64_t{0});
    expect_rejected(b, "empty metadata key", first.start, first.start);
    b = src.bytes;
    poke(b, arch.value_pos, kHuge);
    expect_rejected(b, "string value length", arch.start, arch.value_pos);
    b = src.bytes;
    poke(b, arch.value_pos, uint64_t{b.size() - arch.value_pos - 8 + 1});
    expect_rejected(b, "truncated while reading string value", arch.start, arch.end);
    if (!src.layout.tensors.empty()) {
      const auto& t = src.layout.tensors.back();
      b = src.bytes;
      poke(b, t.start, kHuge);
      expect_rejected(b, "tensor name length", t.start, t.start);
      b = src.bytes;
      poke(b, t.start, uint64_t{0});
      expect_rejected(b, "empty tensor name", t.start, t.start);
    }
  }
}

TEST(Malformed, ValueTypes) {
  LAMINA_REQUIRE_TESTDATA();
  for (const char* file : kAllSources) {
    SCOPED_TRACE(file);
    const Source src = load(file);
    const auto& arch = src.layout.kv("general.architecture");
    for (uint32_t bad : {13u, 100u, 0xFFFFFFFFu}) {
      auto b = src.bytes;
      poke(b, arch.type_pos, bad);
      expect_rejected(b, "unknown value type " + std::to_string(bad), arch.start, arch.type_pos);
    }
  }
  const Source src = load(kStories);
  const auto& tokens = src.layout.kv("tokenizer.ggml.tokens");
  for (uint32_t bad : {13u, 0x80000009u}) {
    auto b = src.bytes;
    poke(b, tokens.value_pos, bad);
    expect_rejected(b, "unknown array element type " + std::to_string(bad), tokens.start,
                    tokens.value_pos);
  }
  // A bool must be 0 or 1.
  const Source tiny = load(kTiny);
  const auto& add_bos = tiny.layout.kv("tokenizer.ggml.add_bos_token");
  ASSERT_EQ(add_bos.type, 7u);
  for (uint8_t bad : {uint8_t{2}, uint8_t{255}}) {
    auto b = tiny.bytes;
    poke(b, add_bos.value_pos, bad);
    expect_rejected(b, "bool value " + std::to_string(bad), add_bos.start, add_bos.value_pos);
  }
}

TEST(Malformed, Arrays) {
  LAMINA_REQUIRE_TESTDATA();
  for (const char* file : {kStories, kTiny, kVocab}) {
    SCOPED_TRACE(file);
    const Source src = load(file);
    const auto& tokens = src.layout.kv("tokenizer.ggml.tokens");
    for (uint64_t bad : {uint64_t{1} << 40, kHuge, ~uint64_t{0}}) {
      auto b = src.bytes;
      poke(b, tokens.count_pos, bad);
      expect_rejected(b, "array length", tokens.start, tokens.count_pos);
    }
    // A first element whose string length is absurd.
    auto b = src.bytes;
    poke(b, tokens.count_pos + 8, kHuge);
    expect_rejected(b, "string value length", tokens.start, tokens.end);
    // One element more than written: the array swallows the next pair.
    b = src.bytes;
    poke(b, tokens.count_pos, tokens.count + 1);
    expect_any_error(b);
  }
}

// Encodes one metadata pair holding `depth` arrays nested inside each other.
std::vector<std::byte> nested_array_file(uint64_t depth) {
  std::vector<std::byte> b(24);
  poke(b, 0, uint32_t{0x46554747});
  poke(b, 4, uint32_t{3});
  poke(b, 8, uint64_t{0});
  poke(b, 16, uint64_t{1});
  auto append = [&](auto v) {
    const auto at = b.size();
    b.resize(at + sizeof v);
    poke(b, at, v);
  };
  append(uint64_t{4});  // key "deep"
  b.insert(b.end(), {std::byte{'d'}, std::byte{'e'}, std::byte{'e'}, std::byte{'p'}});
  append(uint32_t{9});  // value type: array
  for (uint64_t i = 1; i < depth; ++i) {
    append(uint32_t{9});  // element type: array
    append(uint64_t{1});  // one element
  }
  append(uint32_t{0});  // innermost: an empty array of uint8
  append(uint64_t{0});
  return b;
}

TEST(Malformed, DeeplyNestedArrays) {
  const uint64_t limit = ReadLimits{}.max_array_depth;
  EXPECT_FALSE(testing::parse_error(nested_array_file(limit)).has_value());
  const auto too_deep = nested_array_file(limit + 1);
  expect_rejected(too_deep, "nested deeper", 24, too_deep.size());
  // Far deeper than any stack would survive with naive recursion.
  const auto hostile = nested_array_file(200000);
  expect_rejected(hostile, "nested deeper", 24, hostile.size());

  // The same through the writer, next to a real model's metadata and tensors.
  LAMINA_REQUIRE_TESTDATA();
  const GgufFile stories = GgufFile::open(testing::testdata_file(kStories));
  auto nested = [](uint64_t depth) {
    Value v = Value::string_array({"leaf"});
    for (uint64_t i = 1; i < depth; ++i) v = Value::array(Array::from_values(ValueType::Array, {v}));
    return v;
  };
  for (uint64_t depth : {limit, limit + 1}) {
    GgufWriter w;
    w.copy_metadata_from(stories);
    w.set("test.nested", nested(depth));
    for (const auto& t : stories.tensors()) w.add_tensor_view(t.name, t.type, t.shape(), t.data);
    const auto bytes = w.to_bytes();
    const auto layout = testing::walk_layout(bytes);
    const auto& kv = layout.kv("test.nested");
    if (depth <= limit)
      EXPECT_FALSE(testing::parse_error(bytes).has_value());
    else
      expect_rejected(bytes, "nested deeper", kv.start, kv.end);
  }
}

TEST(Malformed, DuplicateKeysAndNames) {
  LAMINA_REQUIRE_TESTDATA();
  Source s = load(kStories);
  // "tokenizer.ggml.eos_token_id" -> "tokenizer.ggml.bos_token_id" (same length).
  const auto& eos = s.layout.kv("tokenizer.ggml.eos_token_id");
  ASSERT_LT(s.layout.kv("tokenizer.ggml.bos_token_id").start, eos.start);
  auto b = s.bytes;
  patch_text(b, eos.start + 8, "tokenizer.ggml.bos_token_id");
  expect_rejected(b, "duplicate metadata key 'tokenizer.ggml.bos_token_id'", eos.start, eos.start);

  // "blk.0.attn_k.weight" -> "blk.0.attn_q.weight" (the earlier tensor keeps the name).
  const auto& k = s.layout.tensor("blk.0.attn_k.weight");
  ASSERT_LT(s.layout.tensor("blk.0.attn_q.weight").start, k.start);
  b = s.bytes;
  patch_text(b, k.start + 8, "blk.0.attn_q.weight");
  expect_rejected(b, "duplicate tensor name 'blk.0.attn_q.weight'", k.start, k.start);

  // In the quant file: "lamina.testdata.kind" -> "lamina.testdata.type".
  const Source q = load(kQuant);
  const auto& kind = q.layout.kv("lamina.testdata.kind");
  const auto& type = q.layout.kv("lamina.testdata.type");
  b = q.bytes;
  patch_text(b, kind.start + 8, "lamina.testdata.type");
  const uint64_t later = std::max(kind.start, type.start);
  expect_rejected(b, "duplicate metadata key 'lamina.testdata.type'", later, later);
}

TEST(Malformed, InvalidUtf8) {
  LAMINA_REQUIRE_TESTDATA();
  const Source s = load(kStories);
  const auto& kv = s.layout.kv("general.name");  // "general.name"
  const auto& t = s.layout.tensor("output_norm.weight");
  const std::vector<std::string> bad = {
      "\xFF",              // never valid
      "\xC0\xAF",          // overlong '/'
      "\xED\xA0\x80",      // UTF-16 surrogate
      "\xF4\x90\x80\x80",  // above U+10FFFF
      "\x80",              // lone continuation byte
  };
  for (const auto& seq : bad) {
    auto b = s.bytes;
    patch_text(b, kv.start + 8, seq);
    expect_rejected(b, "metadata key is not valid UTF-8", kv.start, kv.start);
    b = s.bytes;
    patch_text(b, t.start + 8, seq);
    expect_rejected(b, "tensor name is not valid UTF-8", t.start, t.start);
  }
  // A multi-byte sequence cut by the end of the key.
  auto b = s.bytes;
  patch_text(b, kv.start + 8 + 11, "\xE2");  // last byte of "general.name"
  expect_rejected(b, "not valid UTF-8", kv.start, kv.start);
}

TEST(Malformed, TensorShapes) {
  LAMINA_REQUIRE_TESTDATA();
  const Source s = load(kStories);
  const auto& t = s.layout.tensor("blk.2.ffn_down.weight");  // F32 [172, 64]
  auto with = [&](uint64_t pos, auto value) {
    auto b = s.bytes;
    poke(b, pos, value);
    return b;
  };
  for (uint32_t n_dims : {0u, 5u, 0xFFFFFFFFu})
    expect_rejected(with(t.n_dims_pos, n_dims), "n_dims " + std::to_string(n_dims), t.start,
                    t.n_dims_pos);
  expect_rejected(with(t.dim_pos[0], uint64_t{0}), "dimension 0 is zero", t.start, t.dim_pos[0]);
  expect_rejected(with(t.dim_pos[1], uint64_t{0}), "dimension 1 is zero", t.start, t.dim_pos[1]);
  expect_rejected(with(t.dim_pos[0], uint64_t{1} << 63), "dimension 0 is too large", t.start,
                  t.dim_pos[0]);
  // 2^40 x 2^40 elements: the element count overflows 64 bits.
  auto b = with(t.dim_pos[0], uint64_t{1} << 40);
  poke(b, t.dim_pos[1], uint64_t{1} << 40);
  expect_rejected(b, "element count overflows", t.start, t.type_pos);
  // 2^62 F32 elements fit, their byte count does not.
  b = with(t.dim_pos[0], uint64_t{1} << 62);
  poke(b, t.dim_pos[1], uint64_t{1});
  expect_rejected(b, "byte size overflows", t.start, t.type_pos);
  // Large but representable: the data cannot be in the file.
  b = with(t.dim_pos[1], uint64_t{1} << 40);
  expect_rejected(b, "runs past the end of the file", t.start, t.end);

  // Row lengths that are not whole blocks.
  const Source tiny = load(kTiny);
  const auto& embd = tiny.layout.tensor("token_embd.weight");  // Q8_0 [128, 2048]
  auto tb = tiny.bytes;
  poke(tb, embd.dim_pos[0], uint64_t{100});
  expect_rejected(tb, "row length 100 is not a multiple of the Q8_0 block size 32", embd.start,
                  embd.type_pos);
  const Source q = load(kQuant);
  const auto& qt = q.layout.tensor("q");  // Q4_K [1024, 8]
  auto qb = q.bytes;
  poke(qb, qt.dim_pos[0], uint64_t{1000});
  expect_rejected(qb, "Q4_K block size 256", qt.start, qt.type_pos);
}

TEST(Malformed, TensorTypes) {
  LAMINA_REQUIRE_TESTDATA();
  const Source s = load(kStories);
  const auto& t = s.layout.tensor("blk.1.attn_q.weight");
  for (uint32_t bad : {4u, 5u, 31u, 36u, 40u, 1000u, 0xFFFFFFFFu}) {
    auto b = s.bytes;
    poke(b, t.type_pos, bad);
    expect_rejected(b, "unknown tensor type id " + std::to_string(bad), t.start, t.type_pos);
  }
  // A valid but wider type: the data now runs into the next tensor, or past the end.
  auto b = s.bytes;
  poke(b, t.type_pos, uint32_t{28});  // F64
  expect_rejected(b, "overlaps", t.start, s.layout.infos_end);
  const auto& last = s.layout.tensors.back();
  b = s.bytes;
  poke(b, last.type_pos, uint32_t{28});
  expect_rejected(b, "runs past the end of the file", last.start, last.end);
}

TEST(Malformed, TensorOffsets) {
  LAMINA_REQUIRE_TESTDATA();
  for (const char* file : {kStories, kTiny, kQuant}) {
    SCOPED_TRACE(file);
    const Source s = load(file);
    const auto& t1 = s.layout.tensors.at(1);
    auto with = [&](const testing::TensorLayout& t, uint64_t offset) {
      auto b = s.bytes;
      poke(b, t.offset_pos, offset);
      return b;
    };
    for (uint64_t delta : {1, 4, 16})
      expect_rejected(with(t1, t1.offset + delta), "is not a multiple of the alignment 32",
                      t1.start, t1.offset_pos);
    const auto& last = s.layout.tensors.back();
    const uint64_t data_size = s.bytes.size() - s.layout.data_offset;
    for (uint64_t offset : {(data_size + 31) / 32 * 32, uint64_t{1} << 63, ~uint64_t{31}})
      expect_rejected(with(last, offset), "runs past the end of the file", last.start, last.end);

    // Full overlap (same start) and partial overlap (32 bytes in).
    const auto& t0 = s.layout.tensors.at(0);
    expect_rejected(with(t1, t0.offset), "overlaps", t0.start, t1.end);
    expect_rejected(with(t1, t0.offset + 32), "overlaps", t0.start, t1.end);
  }
}

// A real model re-written with general.alignment = 64, then that key patched.
TEST(Malformed, Alignment) {
  LAMINA_REQUIRE_TESTDATA();
  const GgufFile stories = GgufFile::open(testing::testdata_file(kStories));
  GgufWriter w(64);
  w.copy_metadata_from(stories);
  for (const auto& t : stories.tensors()) w.add_tensor_view(t.name, t.type, t.shape(), t.data);
  const auto good = w.to_bytes();
  ASSERT_EQ(GgufFile::parse(good).alignment(), 64u);
  const auto layout = testing::walk_layout(good);
  const auto& kv = layout.kv("general.alignment");
  ASSERT_EQ(kv.type, 4u);

  for (uint32_t bad : {0u, 3u, 48u, 0x80000001u}) {
    auto b = good;
    poke(b, kv.value_pos, bad);
    expect_rejected(b, "general.alignment " + std::to_string(bad) + " is not a power of two",
                    kv.start, kv.end);
  }
  // Same size, wrong type.
  for (auto [type, name] : {std::pair{5u, "int32"}, std::pair{6u, "float32"}}) {
    auto b = good;
    poke(b, kv.type_pos, uint32_t{type});
    expect_rejected(b, std::string("general.alignment must be uint32, found ") + name, kv.start,
                    kv.end);
  }
  // A valid power of two the offsets do not follow.
  auto b = good;
  poke(b, kv.value_pos, uint32_t{4096});
  expect_rejected(b, "is not a multiple of the alignment 4096", layout.tensors.front().start,
                  layout.infos_end);
}

// Random byte damage in the metadata and tensor infos: whatever happens, the
// reader either accepts the file (then every view lies inside it) or throws.
TEST(Malformed, RandomDamageNeverCrashes) {
  LAMINA_REQUIRE_TESTDATA();
  std::mt19937_64 rng(20261121);
  std::size_t rejected = 0, accepted = 0;
  for (const char* file : {kStories, kQuant, kTiny}) {
    Source s = load(file);
    auto& b = s.bytes;
    const uint64_t region = s.layout.data_offset;
    for (int round = 0; round < 600; ++round) {
      // Damage in place and undo afterwards: copying the whole file per round is slow.
      std::vector<std::pair<uint64_t, std::array<std::byte, 8>>> undo;
      const int edits = 1 + static_cast<int>(rng() % 4);
      for (int e = 0; e < edits; ++e) {
        const uint64_t pos = rng() % (region - 8);
        std::array<std::byte, 8> saved;
        std::copy_n(b.begin() + static_cast<std::ptrdiff_t>(pos), 8, saved.begin());
        undo.emplace_back(pos, saved);
        switch (rng() % 3) {
          case 0:
            b[pos] = static_cast<std::byte>(rng());
            break;
          case 1:
            b[pos] ^= std::byte{1} << (rng() % 8);
            break;
          default:
            poke(b, pos, rng() >> (rng() % 64));
        }
      }
      try {
        const GgufFile f = GgufFile::parse(b);
        ++accepted;
        for (const auto& t : f.tensors()) {
          ASSERT_GE(t.data.data(), b.data());
          ASSERT_LE(t.data.data() + t.data.size(), b.data() + b.size());
        }
      } catch (const GgufError& e) {
        ++rejected;
        EXPECT_LE(e.offset(), b.size()) << e.what();
      }
      for (auto it = undo.rbegin(); it != undo.rend(); ++it)
        std::copy(it->second.begin(), it->second.end(),
                  b.begin() + static_cast<std::ptrdiff_t>(it->first));
    }
  }
  EXPECT_GT(rejected, 0u);
  EXPECT_GT(accepted, 0u);  // e.g. damage inside a token string
}

}  // namespace
}  // namespace lamina::gguf
