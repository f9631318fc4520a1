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
  KvType type = KvType::F32;
};

// Storage is allocated once: [seq][layer][pos][kv_dim] for K and for V. Rows
// are written and read as f32; an F16 cache rounds on write.
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
  // Direct f32 rows (only for an F32 cache): avoids a copy in attention.
  const float* k_rows_f32(uint32_t seq, uint32_t layer, uint32_t pos0) const;
  const float* v_rows_f32(uint32_t seq, uint32_t layer, uint32_t pos0) const;

 private:
  std::size_t offset(bool value, uint32_t seq, uint32_t layer, uint32_t pos) const;
  void store(bool value, uint32_t seq, uint32_t layer, uint32_t pos, const float* src);
  void load(bool value, uint32_t seq, uint32_t layer, uint32_t pos0, uint32_t n_pos, float* out) const;

  uint32_t n_layer_, n_ctx_, n_seq_, k_dim_, v_dim_;
  KvType type_;
  std::size_t elem_bytes_;
  std::size_t k_bytes_per_seq_;  // K part of one sequence, all layers
  std::vector<std::byte> storage_;
};

}  // namespace lamina::model
