#include "lamina/model/kv_cache.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "cpu/vector_kernels.h"
#include "lamina/model/forward.h"
#include "lamina/quant/reference.h"

namespace lamina::model {

KvCache::KvCache(const ModelConfig& config, const KvCacheOptions& options)
    : n_layer_(config.n_layer),
      n_ctx_(options.n_ctx),
      n_seq_(options.n_seq),
      k_dim_(config.k_dim()),
      v_dim_(config.v_dim()),
      values_in_keys_(config.latent_attention()),
      type_(options.type) {
  if (n_ctx_ == 0 || n_seq_ == 0) throw ModelError("KV cache needs at least one position and one sequence");
  if (values_in_keys_ && v_dim_ > k_dim_) throw ModelError("KV cache: values stored in keys must not be wider");
  if (type_ == KvType::Q8_0) {
    // Each head's slice of a row must be whole blocks for attention to read
    // it where it lies.
    const uint32_t k_unit = values_in_keys_ ? k_dim_ : config.head_dim_k;
    const uint32_t v_unit = values_in_keys_ ? v_dim_ : config.head_dim_v;
    if (k_unit % quant::kQK != 0 || v_unit % quant::kQK != 0)
      throw ModelError("the q8_0 KV cache needs head dims divisible by " + std::to_string(quant::kQK) +
                       "; this model's K head dim is " + std::to_string(k_unit) + " and V head dim " +
                       std::to_string(v_unit) + " (use --kv-type f16)");
  }
  const uint32_t per_seq = kv_blocks_for(n_ctx_);
  const bool own_runs = options.n_blocks == 0;
  n_blocks_ = own_runs ? per_seq * n_seq_ : options.n_blocks;
  if (own_runs && n_blocks_ / n_seq_ != per_seq)
    throw ModelError("KV cache: " + std::to_string(n_seq_) + " slots of " + std::to_string(n_ctx_) +
                     " positions need more than 2^32 blocks");
  block_k_bytes_ = std::size_t{n_layer_} * kKvBlockPositions * row_bytes(k_dim_);
  const std::size_t block_v_bytes =
      values_in_keys_ ? 0 : std::size_t{n_layer_} * kKvBlockPositions * row_bytes(v_dim_);
  block_bytes_ = block_k_bytes_ + block_v_bytes;
  storage_.resize(block_bytes_ * n_blocks_);
  tables_.resize(n_seq_);
  if (own_runs) {
    for (uint32_t s = 0; s < n_seq_; ++s) {
      tables_[s].resize(per_seq);
      for (uint32_t i = 0; i < per_seq; ++i) tables_[s][i] = s * per_seq + i;
    }
  }
}

void check_block_table(uint32_t seq, std::span<const uint32_t> blocks, uint32_t n_seq, uint32_t n_ctx,
                       uint32_t n_blocks) {
  if (seq >= n_seq)
    throw ModelError("KV cache: block table for slot " + std::to_string(seq) + " of " + std::to_string(n_seq));
  if (blocks.size() > kv_blocks_for(n_ctx))
    throw ModelError("KV cache: " + std::to_string(blocks.size()) + " blocks for slot " + std::to_string(seq) +
                     ", more than its " + std::to_string(n_ctx) + " positions need");
  for (std::size_t i = 0; i < blocks.size(); ++i)
    if (blocks[i] >= n_blocks)
      throw ModelError("KV cache: block " + std::to_string(blocks[i]) + " (entry " + std::to_string(i) +
                       " of slot " + std::to_string(seq) + "'s table) outside the pool of " +
                       std::to_string(n_blocks));
}

void check_block_copy(uint32_t src, uint32_t dst, uint32_t n_pos, uint32_t n_blocks) {
  if (src >= n_blocks || dst >= n_blocks || n_pos > kKvBlockPositions)
    throw ModelError("KV cache: copying " + std::to_string(n_pos) + " positions from block " + std::to_string(src) +
                     " to block " + std::to_string(dst) + " of " + std::to_string(n_blocks) + " blocks of " +
                     std::to_string(kKvBlockPositions) + " positions");
}

void throw_position_past_table(std::size_t index, const TokenInput& t, uint32_t table_blocks) {
  throw ModelError("token " + std::to_string(index) + " of the batch: position " + std::to_string(t.pos) +
                   " of slot " + std::to_string(t.seq) + " lies past the " + std::to_string(table_blocks) +
                   " KV blocks its table holds");
}

void KvCache::set_block_table(uint32_t seq, std::span<const uint32_t> blocks) {
  check_block_table(seq, blocks, n_seq_, n_ctx_, n_blocks_);
  tables_[seq].assign(blocks.begin(), blocks.end());
}

std::span<const uint32_t> KvCache::block_table(uint32_t seq) const { return tables_.at(seq); }

void KvCache::check_positions(std::span<const TokenInput> batch) const {
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const TokenInput& t = batch[i];
    if (t.seq < n_seq_ && t.pos / kKvBlockPositions < tables_[t.seq].size()) continue;
    throw_position_past_table(i, t, t.seq < n_seq_ ? static_cast<uint32_t>(tables_[t.seq].size()) : 0);
  }
}

std::size_t KvCache::row_bytes(std::size_t dim) const {
  switch (type_) {
    case KvType::F32: return dim * sizeof(float);
    case KvType::F16: return dim * sizeof(uint16_t);
    case KvType::Q8_0: return dim / quant::kQK * sizeof(quant::BlockQ8_0);
  }
  throw ModelError("KV cache: unknown type " + std::to_string(static_cast<int>(type_)));
}

std::size_t KvCache::block_offset(bool value, uint32_t block, uint32_t layer, uint32_t pos_in_block) const {
  if (values_in_keys_) value = false;
  const std::size_t dim = value ? v_dim_ : k_dim_;
  return block_bytes_ * block + (value ? block_k_bytes_ : 0) +
         (std::size_t{layer} * kKvBlockPositions + pos_in_block) * row_bytes(dim);
}

std::size_t KvCache::offset(bool value, uint32_t seq, uint32_t layer, uint32_t pos) const {
  return block_offset(value, tables_[seq][pos / kKvBlockPositions], layer, pos % kKvBlockPositions);
}

void KvCache::copy_block(uint32_t src, uint32_t dst, uint32_t n_pos) {
  check_block_copy(src, dst, n_pos, n_blocks_);
  if (src == dst || n_pos == 0) return;
  for (const bool value : {false, true}) {
    if (value && values_in_keys_) continue;
    const std::size_t bytes = std::size_t{n_pos} * row_bytes(value ? v_dim_ : k_dim_);
    for (uint32_t layer = 0; layer < n_layer_; ++layer)
      std::memcpy(storage_.data() + block_offset(value, dst, layer, 0),
                  storage_.data() + block_offset(value, src, layer, 0), bytes);
  }
}

void KvCache::store(bool value, uint32_t seq, uint32_t layer, uint32_t pos, const float* src) {
  if (value && values_in_keys_) throw ModelError("KV cache: this model's values are stored with its keys");
  const std::size_t dim = value ? v_dim_ : k_dim_;
  std::byte* dst = storage_.data() + offset(value, seq, layer, pos);
  switch (type_) {
    case KvType::F32: std::memcpy(dst, src, dim * sizeof(float)); return;
    case KvType::F16: cpu::f32_to_f16_row(src, reinterpret_cast<uint16_t*>(dst), dim); return;
    case KvType::Q8_0: quant::quantize_row_ref(quant::QuantFormat::Q8_0, src, dst, dim); return;
  }
}

void KvCache::load(bool value, uint32_t seq, uint32_t layer, uint32_t pos0, uint32_t n_pos, float* out) const {
  const std::size_t dim = value ? v_dim_ : k_dim_;
  if (value && values_in_keys_) value = false;  // V is the head of each K row
  // Row by row: consecutive positions may lie in different blocks.
  for (uint32_t i = 0; i < n_pos; ++i) {
    const std::byte* src = storage_.data() + offset(value, seq, layer, pos0 + i);
    float* row = out + std::size_t{i} * dim;
    switch (type_) {
      case KvType::F32: std::memcpy(row, src, dim * sizeof(float)); break;
      case KvType::F16: cpu::f16_to_f32_row(reinterpret_cast<const uint16_t*>(src), row, dim); break;
      case KvType::Q8_0: quant::dequantize_row_ref(quant::QuantFormat::Q8_0, src, row, dim); break;
    }
  }
}

void KvCache::store_k(uint32_t seq, uint32_t layer, uint32_t pos, const float* k) { store(false, seq, layer, pos, k); }
void KvCache::store_v(uint32_t seq, uint32_t layer, uint32_t pos, const float* v) { store(true, seq, layer, pos, v); }
void KvCache::load_k(uint32_t seq, uint32_t layer, uint32_t pos0, uint32_t n_pos, float* out) const {
  load(false, seq, layer, pos0, n_pos, out);
}
void KvCache::load_v(uint32_t seq, uint32_t layer, uint32_t pos0, uint32_t n_pos, float* out) const {
  load(true, seq, layer, pos0, n_pos, out);
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

const quant::BlockQ8_0* KvCache::k_rows_q8_0(uint32_t seq, uint32_t layer, uint32_t pos0) const {
  return reinterpret_cast<const quant::BlockQ8_0*>(rows_of_type(KvType::Q8_0, false, seq, layer, pos0));
}
const quant::BlockQ8_0* KvCache::v_rows_q8_0(uint32_t seq, uint32_t layer, uint32_t pos0) const {
  return reinterpret_cast<const quant::BlockQ8_0*>(rows_of_type(KvType::Q8_0, true, seq, layer, pos0));
}

}  // namespace lamina::model
