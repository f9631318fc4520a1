// Keys and values of past positions: a pool of fixed-size blocks that the
// sequence slots reach through their block tables.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "lamina/model/config.h"
#include "lamina/model/export.h"
#include "lamina/quant/blocks.h"

namespace lamina::model {

struct TokenInput;

// Q8_0: each row as GGUF q8_0 blocks of 32 values (an f16 scale and 32
// int8), k_dim() / 32 * 34 bytes; CPU only, for head dims divisible by 32.
enum class KvType { F32, F16, Q8_0 };

// Positions per KV block. The CPU attention's tiles and the GPU attention's
// spans never cross a block, so each reads its rows from one block.
inline constexpr uint32_t kKvBlockPositions = 256;

// Blocks one sequence needs for n_pos positions.
inline constexpr uint32_t kv_blocks_for(uint32_t n_pos) {
  return (n_pos + kKvBlockPositions - 1) / kKvBlockPositions;
}

// The argument checks of a pool of n_blocks KV blocks shared by n_seq slots
// of n_ctx positions, for the CPU cache and the GPU executor alike
// (ModelError naming the slot, entry, block or position): a slot's table
// holds at most kv_blocks_for(n_ctx) blocks of the pool; a copy moves at
// most kKvBlockPositions positions between blocks of the pool; a token's
// position lies within its slot's table (of table_blocks blocks).
LAMINA_MODEL_API void check_block_table(uint32_t seq, std::span<const uint32_t> blocks, uint32_t n_seq, uint32_t n_ctx,
                                        uint32_t n_blocks);
LAMINA_MODEL_API void check_block_copy(uint32_t src, uint32_t dst, uint32_t n_pos, uint32_t n_blocks);
[[noreturn]] LAMINA_MODEL_API void throw_position_past_table(std::size_t index, const TokenInput& token,
                                                             uint32_t table_blocks);

struct LAMINA_MODEL_API KvCacheOptions {
  uint32_t n_ctx = 0;    // positions per sequence
  uint32_t n_seq = 1;    // sequence slots
  KvType type = KvType::F16;
  // Blocks in the pool; 0: kv_blocks_for(n_ctx) per slot, each slot's table
  // starting as its own run of them (slot s: blocks s * kv_blocks_for(n_ctx)
  // on). With any other count the tables start empty.
  uint32_t n_blocks = 0;
};

// A block holds, for every layer, kKvBlockPositions rows of K and of V
// ([layer][pos][dim], K's layers first). Rows are written as f32; an F16
// cache rounds them to nearest even on write, a Q8_0 cache quantizes them
// as libquant's reference q8_0 quantizer does (each block of 32 by its
// largest magnitude). Slot `seq`'s position p lives
// in block table(seq)[p / kKvBlockPositions]; several slots may share a
// block (positions they only read). Latent attention (deepseek2) stores K
// only: its V is the first v_dim() values of each K row (the latent), so
// store_v is not called and the V rows are read from K's storage,
// v_stride() = k_dim() apart.
class LAMINA_MODEL_API KvCache {
 public:
  KvCache(const ModelConfig& config, const KvCacheOptions& options);

  uint32_t n_ctx() const { return n_ctx_; }
  uint32_t n_seq() const { return n_seq_; }
  uint32_t n_blocks() const { return n_blocks_; }
  KvType type() const { return type_; }
  std::size_t bytes() const { return storage_.size(); }
  std::size_t block_bytes() const { return block_bytes_; }

  // Slot `seq`'s positions [i * kKvBlockPositions, (i + 1) * kKvBlockPositions)
  // now live in blocks[i]; at most kv_blocks_for(n_ctx()) blocks, each below
  // n_blocks(). Throws ModelError otherwise.
  void set_block_table(uint32_t seq, std::span<const uint32_t> blocks);
  std::span<const uint32_t> block_table(uint32_t seq) const;
  // Positions [0, n_pos) of every layer of block `src` into block `dst`.
  void copy_block(uint32_t src, uint32_t dst, uint32_t n_pos);
  // Throws ModelError naming the first token whose position lies past its
  // slot's block table (its rows would have nowhere to go).
  void check_positions(std::span<const TokenInput> batch) const;

  void store_k(uint32_t seq, uint32_t layer, uint32_t pos, const float* k);
  void store_v(uint32_t seq, uint32_t layer, uint32_t pos, const float* v);
  // Reads `n_pos` rows starting at `pos0` into `out` ([n_pos][dim], f32).
  void load_k(uint32_t seq, uint32_t layer, uint32_t pos0, uint32_t n_pos, float* out) const;
  void load_v(uint32_t seq, uint32_t layer, uint32_t pos0, uint32_t n_pos, float* out) const;
  // The rows from `pos0` to the end of its block as stored, k_dim() or
  // v_stride() values apart, for attention to read without a copy: f32 rows
  // of an F32 cache, f16 bits of an F16 one, q8_0 blocks of a Q8_0 one
  // (rows k_dim() / 32 or v_stride() / 32 blocks apart); nullptr when the
  // cache holds another type.
  const float* k_rows_f32(uint32_t seq, uint32_t layer, uint32_t pos0) const;
  const float* v_rows_f32(uint32_t seq, uint32_t layer, uint32_t pos0) const;
  const uint16_t* k_rows_f16(uint32_t seq, uint32_t layer, uint32_t pos0) const;
  const uint16_t* v_rows_f16(uint32_t seq, uint32_t layer, uint32_t pos0) const;
  const quant::BlockQ8_0* k_rows_q8_0(uint32_t seq, uint32_t layer, uint32_t pos0) const;
  const quant::BlockQ8_0* v_rows_q8_0(uint32_t seq, uint32_t layer, uint32_t pos0) const;
  uint32_t k_dim() const { return k_dim_; }
  uint32_t v_dim() const { return v_dim_; }
  // Values between the starts of two V rows.
  uint32_t v_stride() const { return values_in_keys_ ? k_dim_ : v_dim_; }
  bool values_in_keys() const { return values_in_keys_; }

 private:
  std::size_t row_bytes(std::size_t dim) const;
  std::size_t offset(bool value, uint32_t seq, uint32_t layer, uint32_t pos) const;
  std::size_t block_offset(bool value, uint32_t block, uint32_t layer, uint32_t pos_in_block) const;
  const std::byte* rows_of_type(KvType type, bool value, uint32_t seq, uint32_t layer, uint32_t pos0) const;
  void store(bool value, uint32_t seq, uint32_t layer, uint32_t pos, const float* src);
  void load(bool value, uint32_t seq, uint32_t layer, uint32_t pos0, uint32_t n_pos, float* out) const;

  uint32_t n_layer_, n_ctx_, n_seq_, k_dim_, v_dim_;
  bool values_in_keys_;
  KvType type_;
  uint32_t n_blocks_ = 0;
  std::size_t block_k_bytes_ = 0;  // the K part of a block, all layers
  std::size_t block_bytes_ = 0;
  std::vector<std::vector<uint32_t>> tables_;  // by slot
  std::vector<std::byte> storage_;
};

}  // namespace lamina::model
