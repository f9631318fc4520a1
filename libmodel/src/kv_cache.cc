#include "lamina/model/kv_cache.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "cpu/vector_kernels.h"

namespace lamina::model {

KvCache::KvCache(const ModelConfig& config, const KvCacheOptions& options)
    : n_layer_(config.n_layer),
      n_ctx_(options.n_ctx),
      n_seq_(options.n_seq),
      k_dim_(config.k_dim()),
      v_dim_(config.v_dim()),
      values_in_keys_(config.latent_attention()),
      type_(options.type),
      elem_bytes_(options.type == KvType::F32 ? 4 : 2) {
  if (n_ctx_ == 0 || n_seq_ == 0) throw ModelError("KV cache needs at least one position and one sequence");
  if (values_in_keys_ && v_dim_ > k_dim_) throw ModelError("KV cache: values stored in keys must not be wider");
  k_bytes_per_seq_ = std::size_t{n_layer_} * n_ctx_ * k_dim_ * elem_bytes_;
  const std::size_t v_per_seq = values_in_keys_ ? 0 : std::size_t{n_layer_} * n_ctx_ * v_dim_ * elem_bytes_;
  storage_.resize((k_bytes_per_seq_ + v_per_seq) * n_seq_);
}

std::size_t KvCache::offset(bool value, uint32_t seq, uint32_t layer, uint32_t pos) const {
  if (values_in_keys_) value = false;
  const std::size_t dim = value ? v_dim_ : k_dim_;
  const std::size_t v_bytes_per_seq = std::size_t{n_layer_} * n_ctx_ * v_dim_ * elem_bytes_;
  std::size_t base = value ? k_bytes_per_seq_ * n_seq_ + v_bytes_per_seq * seq : k_bytes_per_seq_ * seq;
  return base + ((std::size_t{layer} * n_ctx_ + pos) * dim) * elem_bytes_;
}

void KvCache::store(bool value, uint32_t seq, uint32_t layer, uint32_t pos, const float* src) {
  if (value && values_in_keys_) throw ModelError("KV cache: this model's values are stored with its keys");
  const std::size_t dim = value ? v_dim_ : k_dim_;
  std::byte* dst = storage_.data() + offset(value, seq, layer, pos);
  if (type_ == KvType::F32) {
    std::memcpy(dst, src, dim * sizeof(float));
    return;
  }
  cpu::f32_to_f16_row(src, reinterpret_cast<uint16_t*>(dst), dim);
}

void KvCache::load(bool value, uint32_t seq, uint32_t layer, uint32_t pos0, uint32_t n_pos, float* out) const {
  if (value && values_in_keys_) {
    std::vector<float> row(k_dim_);
    for (uint32_t i = 0; i < n_pos; ++i) {
      load(false, seq, layer, pos0 + i, 1, row.data());
      std::copy_n(row.data(), v_dim_, out + std::size_t{i} * v_dim_);
    }
    return;
  }
  const std::size_t n = std::size_t{n_pos} * (value ? v_dim_ : k_dim_);
  const std::byte* src = storage_.data() + offset(value, seq, layer, pos0);
  if (type_ == KvType::F32) {
    std::memcpy(out, src, n * sizeof(float));
    return;
  }
  cpu::f16_to_f32_row(reinterpret_cast<const uint16_t*>(src), out, n);
}

void KvCache::store_k(uint32_t seq, uint32_t layer, uint32_t pos, const float* k) { store(false, seq, layer, pos, k); }
void KvCache::store_v(uint32_t seq, uint32_t layer, uint32_t pos, const float* v) { store(true, seq, layer, pos, v); }
void KvCache::load_k(uint32_t seq, uint32_t layer, uint32_t pos0, uint32_t n_pos, float* out) const {
  load(false, seq, layer, pos0, n_pos, out);
}
void KvCache::load_v(uint32_t seq, uint32_t layer, uint32_t pos0, uint32_t n_pos, float* out) const {
  load(true, seq, layer, pos0, n_pos, out);
}

void KvCache::copy_prefix(uint32_t src, uint32_t dst, uint32_t n_pos) {
  if (src >= n_seq_ || dst >= n_seq_ || n_pos > n_ctx_)
    throw ModelError("KV cache: copying " + std::to_string(n_pos) + " positions from slot " + std::to_string(src) +
                     " to slot " + std::to_string(dst) + " of " + std::to_string(n_seq_) + " slots of " +
                     std::to_string(n_ctx_) + " positions");
  if (src == dst || n_pos == 0) return;
  for (const bool value : {false, true}) {
    if (value && values_in_keys_) continue;
    const std::size_t bytes = std::size_t{n_pos} * (value ? v_dim_ : k_dim_) * elem_bytes_;
    for (uint32_t layer = 0; layer < n_layer_; ++layer)
      std::memcpy(storage_.data() + offset(value, dst, layer, 0), storage_.data() + offset(value, src, layer, 0),
                  bytes);
  }
}

const std::byte* KvCache::rows_of_type(KvType type, bool value, uint32_t seq, uint32_t layer, uint32_t pos0) const {
  return type_ == type ? storage_.data() + offset(value, seq, layer, pos0) : nullptr;
}
const float* KvCache::k_rows_f32(uint32_t seq, uint32_t layer, uint32_t pos0) const {
  return reinterpret_cast<const float*>(rows_of_type(KvType::F32, false, seq, layer, pos0));
}
const float* KvCache::v_rows_f32(uint32_t seq, uint32_t layer, uint32_t pos0) const {
  return reinterpret_cast<const float*>(rows_of_type(KvType::F32, true, seq, layer, pos0));
}
const uint16_t* KvCache::k_rows_f16(uint32_t seq, uint32_t layer, uint32_t pos0) const {
  return reinterpret_cast<const uint16_t*>(rows_of_type(KvType::F16, false, seq, layer, pos0));
}
const uint16_t* KvCache::v_rows_f16(uint32_t seq, uint32_t layer, uint32_t pos0) const {
  return reinterpret_cast<const uint16_t*>(rows_of_type(KvType::F16, true, seq, layer, pos0));
}

}  // namespace lamina::model
