// Keys and values of past positions, per sequence slot and layer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "lamina/model/config.h"
#include "lamina/model/export.h"

namespace lamina::model {

enum class KvType { F32, F16 };

struct LAMINA_MODEL_API KvCacheOptions {
  uint32_t n_ctx = 0;    // positions per sequence
  uint32_t n_seq = 1;    // sequence slots
  KvType type = KvType::F16;
};

// Storage is allocated once: [seq][layer][pos][kv_dim] for K and for V. Rows
// are written as f32; an F16 cache rounds them to nearest even on write.
// Latent attention (deepseek2) stores K only: its V is the first v_dim()
// values of each K row (the latent), so store_v is not called and the V rows
// are read from K's storage, v_stride() = k_dim() apart.
class LAMINA_MODEL_API KvCache {
 public:
  KvCache(const ModelConfig& config, const KvCacheOptions& options);

  uint32_t n_ctx() const { return n_ctx_; }
  uint32_t n_seq() const { return n_seq_; }
  KvType type() const { return type_; }
  std::size_t bytes() const { return storage_.size(); }

  void store_k(uint32_t seq, uint32_t layer, uint32_t pos, const float* k);
  void store_v(uint32_t seq, uint32_t layer, uint32_t pos, const float* v);
  // Reads `n_pos` rows starting at `pos0` into `out` ([n_pos][dim], f32).
  void load_k(uint32_t seq, uint32_t layer, uint32_t pos0, uint32_t n_pos, float* out) const;
  void load_v(uint32_t seq, uint32_t layer, uint32_t pos0, uint32_t n_pos, float* out) const;
  // Copies positions [0, n_pos) of every layer from slot `src` to slot
  // `dst`, bytes as stored: `dst` then continues from `src`'s state.
  void copy_prefix(uint32_t src, uint32_t dst, uint32_t n_pos);
  // The rows from `pos0` on as stored, k_dim() or v_dim() values apart, for
  // attention to read without a copy: f32 rows of an F32 cache, f16 bits of
  // an F16 one; nullptr when the cache holds the other type.
  const float* k_rows_f32(uint32_t seq, uint32_t layer, uint32_t pos0) const;
  const float* v_rows_f32(uint32_t seq, uint32_t layer, uint32_t pos0) const;
  const uint16_t* k_rows_f16(uint32_t seq, uint32_t layer, uint32_t pos0) const;
  const uint16_t* v_rows_f16(uint32_t seq, uint32_t layer, uint32_t pos0) const;
  uint32_t k_dim() const { return k_dim_; }
  uint32_t v_dim() const { return v_dim_; }
  // Values between the starts of two V rows.
  uint32_t v_stride() const { return values_in_keys_ ? k_dim_ : v_dim_; }
  bool values_in_keys() const { return values_in_keys_; }

 private:
  std::size_t offset(bool value, uint32_t seq, uint32_t layer, uint32_t pos) const;
  const std::byte* rows_of_type(KvType type, bool value, uint32_t seq, uint32_t layer, uint32_t pos0) const;
  void store(bool value, uint32_t seq, uint32_t layer, uint32_t pos, const float* src);
  void load(bool value, uint32_t seq, uint32_t layer, uint32_t pos0, uint32_t n_pos, float* out) const;

  uint32_t n_layer_, n_ctx_, n_seq_, k_dim_, v_dim_;
  bool values_in_keys_;
  KvType type_;
  std::size_t elem_bytes_;
  std::size_t k_bytes_per_seq_;  // K part of one sequence, all layers
  std::vector<std::byte> storage_;
};

}  // namespace lamina::model
