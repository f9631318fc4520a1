// The KV cache's row types: a q8_0 cache holds each row as libquant's
// reference q8_0 codec writes it (blocks of 32: an f16 scale and 32 int8),
// reads back its dequantized values, copies blocks whole, and refuses head
// dims that are not whole blocks, naming them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "lamina/model/kv_cache.h"
#include "lamina/quant/half.h"
#include "lamina/quant/reference.h"

namespace lamina::model {
namespace {

ModelConfig config_with(uint32_t head_dim_k, uint32_t head_dim_v) {
  ModelConfig c;
  c.n_layer = 2;
  c.n_head = 4;
  c.n_head_kv = 2;
  c.head_dim_k = head_dim_k;
  c.head_dim_v = head_dim_v;
  return c;
}

std::vector<float> random_row(std::size_t n, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

TEST(KvCache, Q8_0RowsAreLibquantsCodec) {
  const ModelConfig c = config_with(64, 32);
  KvCache cache(c, {.n_ctx = 300, .n_seq = 2, .type = KvType::Q8_0});
  // 34 bytes per 32 values, K and V rows of every layer and position.
  EXPECT_EQ(cache.block_bytes(), std::size_t{2} * kKvBlockPositions * (128 + 64) / 32 * 34);
  EXPECT_EQ(cache.bytes(), cache.block_bytes() * 2 * kv_blocks_for(300));
  EXPECT_EQ(cache.k_rows_f16(0, 0, 0), nullptr);
  EXPECT_EQ(cache.k_rows_f32(0, 0, 0), nullptr);

  std::mt19937 rng(3);
  for (const uint32_t pos : {0u, 255u, 256u, 299u}) {
    const std::vector<float> k = random_row(c.k_dim(), rng), v = random_row(c.v_dim(), rng);
    cache.store_k(1, 1, pos, k.data());
    cache.store_v(1, 1, pos, v.data());
    for (const bool value : {false, true}) {
      const std::vector<float>& row = value ? v : k;
      std::vector<quant::BlockQ8_0> want(row.size() / quant::kQK);
      quant::quantize_row_ref(quant::QuantFormat::Q8_0, row.data(), want.data(), row.size());
      const quant::BlockQ8_0* got = value ? cache.v_rows_q8_0(1, 1, pos) : cache.k_rows_q8_0(1, 1, pos);
      ASSERT_NE(got, nullptr);
      EXPECT_EQ(std::memcmp(got, want.data(), want.size() * sizeof(quant::BlockQ8_0)), 0) << "pos " << pos;
      std::vector<float> dequantized(row.size()), loaded(row.size());
      quant::dequantize_row_ref(quant::QuantFormat::Q8_0, want.data(), dequantized.data(), row.size());
      if (value) {
        cache.load_v(1, 1, pos, 1, loaded.data());
      } else {
        cache.load_k(1, 1, pos, 1, loaded.data());
      }
      EXPECT_EQ(loaded, dequantized) << "pos " << pos << (value ? " V" : " K");
      // Within half a step of the block's scale of what was written.
      for (std::size_t i = 0; i < row.size(); ++i) {
        const float d = quant::f16_to_f32(want[i / quant::kQK].d);
        EXPECT_LE(std::fabs(loaded[i] - row[i]), 0.5f * d * 1.01f + 1e-6f) << "value " << i;
      }
    }
  }

  // A block copied whole: slot 0 then reads slot 1's rows.
  const uint32_t src = cache.block_table(1)[1], dst = cache.block_table(0)[1];
  cache.copy_block(src, dst, 44);
  std::vector<float> a(c.k_dim()), b(c.k_dim());
  cache.load_k(0, 1, 256, 1, a.data());
  cache.load_k(1, 1, 256, 1, b.data());
  EXPECT_EQ(a, b);
}

TEST(KvCache, Q8_0RefusesHeadDimsThatAreNotWholeBlocks) {
  try {
    KvCache cache(config_with(48, 64), {.n_ctx = 16, .type = KvType::Q8_0});
    ADD_FAILURE() << "head dim 48 accepted";
  } catch (const ModelError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("K head dim is 48 and V head dim 64"), std::string::npos) << what;
    EXPECT_NE(what.find("divisible by 32"), std::string::npos) << what;
  }
  // The same dims in f16 are fine.
  EXPECT_NO_THROW(KvCache(config_with(48, 64), {.n_ctx = 16, .type = KvType::F16}));
}

}  // namespace
}  // namespace lamina::model
