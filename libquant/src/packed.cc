// Packing of weight matrices, the scalar kernels of the packed layouts, and
// the public entry points of lamina/quant/packed.h.
#include "lamina/quant/packed.h"

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "lamina/quant/half.h"
#include "packed_layout.h"

namespace lamina::quant {
namespace detail {

namespace {

// Value j (0..31) of block b of a Q8_0 activation row, in the kernels'
// layout (activations_access.h): groups of 4 blocks, first values 0..15 of
// each, then values 16..31 of each.
int q8_0_value(const ActivationRow& a, size_t b, size_t j) {
  const size_t in_group = 16 * (b % kGroupBlocks) + (j < 16 ? j : kGroupValues / 2 + j - 16);
  return a.values[kGroupValues * (b / kGroupBlocks) + in_group];
}

void dot_q2_k_group(const PackedView& w, size_t g, const ActivationRow& a, float* y) {
  scalar_group<PackedQ2_K>(w, g, y, [&](const PackedQ2_K& p, size_t r, size_t b, double acc) {
    int32_t isum = 0;
    int32_t msum = 0;
    for (size_t j = 0; j < kQK_K / 16; ++j) {
      int32_t sub = 0;  // the 16 products of the sub-block
      for (size_t v = 0; v < 16; ++v) {
        const int q = (p.qs[j][4 * r + v % 4] >> (2 * (v / 4))) & 3;
        sub += q * a.values[kQK_K * b + 16 * j + v];
      }
      isum += (p.sc[j][r] & 15) * sub;
      msum += (p.sc[j][r] >> 4) * a.group_sums[16 * b + j];
    }
    const float da = a.scales[b];
    return add_block<true>(add_block(acc, isum, p.d[r], da), msum, p.dmin[r], da);
  });
}

void dot_q4_0_group(const PackedView& w, size_t g, const ActivationRow& a, float* y) {
  scalar_group<PackedQ4_0>(w, g, y, [&](const PackedQ4_0& p, size_t r, size_t b, double acc) {
    // The values are q - 8: start from -8 times the activations' sum.
    int32_t sum = 8 * a.lane_neg_sums[b * kLanesPerBlock];
    for (size_t t = 0; t < kQK / 8; ++t) {
      for (size_t k = 0; k < 4; ++k) {
        const unsigned byte = p.qs[t][4 * r + k];
        sum += static_cast<int32_t>(byte & 15) * q8_0_value(a, b, 4 * t + k);
        sum += static_cast<int32_t>(byte >> 4) * q8_0_value(a, b, 16 + 4 * t + k);
      }
    }
    return add_block(acc, sum, p.d[r], a.lane_scales[b * kLanesPerBlock]);
  });
}

void dot_q8_0_group(const PackedView& w, size_t g, const ActivationRow& a, float* y) {
  scalar_group<PackedQ8_0>(w, g, y, [&](const PackedQ8_0& p, size_t r, size_t b, double acc) {
    // The stored values are q + 128: start from -128 times the sum.
    int32_t sum = 128 * a.lane_neg_sums[b * kLanesPerBlock];
    for (size_t i = 0; i < kQK; ++i) sum += p.qs[i / 4][4 * r + i % 4] * q8_0_value(a, b, i);
    return add_block(acc, sum, p.d[r], a.lane_scales[b * kLanesPerBlock]);
  });
}

}  // namespace

void pack_q8_0_group(const BlockQ8_0* rows, size_t n_rows, size_t blocks_per_row, size_t g, PackedQ8_0* out) {
  pack_group(rows, n_rows, blocks_per_row, g, out, [](const BlockQ8_0& in, size_t r, PackedQ8_0& p) {
    p.d[r] = in.d;
    for (size_t i = 0; i < kQK; ++i) p.qs[i / 4][4 * r + i % 4] = static_cast<uint8_t>(in.qs[i] + 128);
  });
}

void pack_q2_k_group(const BlockQ2_K* rows, size_t n_rows, size_t blocks_per_row, size_t g, PackedQ2_K* out) {
  pack_group(rows, n_rows, blocks_per_row, g, out, [](const BlockQ2_K& in, size_t r, PackedQ2_K& p) {
    p.d[r] = in.d;
    p.dmin[r] = in.dmin;
    for (size_t j = 0; j < kQK_K / 16; ++j) {
      p.sc[j][r] = in.scales[j];
      const uint32_t word = gather_q2_k_sub_block(in.qs, j);
      std::memcpy(p.qs[j] + 4 * r, &word, 4);
    }
  });
}

void pack_q4_0_group(const BlockQ4_0* rows, size_t n_rows, size_t blocks_per_row, size_t g, PackedQ4_0* out) {
  pack_group(rows, n_rows, blocks_per_row, g, out, [](const BlockQ4_0& in, size_t r, PackedQ4_0& p) {
    p.d[r] = in.d;
    // GGUF's byte j holds values j (low nibble) and 16 + j (high): the
    // same pairing, so bytes move whole.
    for (size_t j = 0; j < kQK / 2; ++j) p.qs[j / 4][4 * r + j % 4] = in.qs[j];
  });
}

void dot_packed_group_scalar(const PackedView& w, size_t g, const ActivationRow& a, float* y) {
  switch (w.format) {
    case QuantFormat::Q2_K: return dot_q2_k_group(w, g, a, y);
    case QuantFormat::Q3_K: return dot_packed_q3_k_group_scalar(w, g, a, y);
    case QuantFormat::Q4_0: return dot_q4_0_group(w, g, a, y);
    case QuantFormat::Q8_0: return dot_q8_0_group(w, g, a, y);
    case QuantFormat::Q4_K: return dot_packed_q4_k_group_scalar(w, g, a, y);
    case QuantFormat::Q5_K: return dot_packed_q5_k_group_scalar(w, g, a, y);
    case QuantFormat::IQ4_XS: return dot_packed_iq4_xs_group_scalar(w, g, a, y);
    default: return;  // pack_weights only makes the formats above
  }
}

}  // namespace detail

bool has_packed_layout(QuantFormat format) { return detail::packed_block_bytes(format) != 0; }

bool packed_layout_is_faster(QuantFormat format) {
  return has_packed_layout(format) && detail::packed_simd_kernel(format);
}

namespace {

template <class Block, class Packed, class PackGroup>
void pack_all(const void* w, const detail::PackedView& view, uint8_t* out, ThreadPool* pool, PackGroup pack_group) {
  const auto pack_groups = [&](size_t begin, size_t end) {
    for (size_t g = begin; g < end; ++g) {
      pack_group(static_cast<const Block*>(w), view.n_out, view.blocks_per_row(), g,
                 reinterpret_cast<Packed*>(out) + g * view.blocks_per_row());
    }
  };
  if (pool) {
    pool->parallel_for(view.groups(), 1, pack_groups);
  } else {
    pack_groups(0, view.groups());
  }
}

}  // namespace

void detail::pack_matrix(QuantFormat format, const void* w, size_t n_out, size_t n_in, uint8_t* out,
                         ThreadPool* pool, bool reference) {
  const PackedView view{format, nullptr, n_out, n_in};
  switch (format) {
    case QuantFormat::Q2_K:
      return pack_all<BlockQ2_K, PackedQ2_K>(w, view, out, pool, pack_q2_k_group);
    case QuantFormat::Q3_K:
      return pack_all<BlockQ3_K, PackedQ3_K>(w, view, out, pool, pack_q3_k_group);
    case QuantFormat::Q4_0:
      return pack_all<BlockQ4_0, PackedQ4_0>(w, view, out, pool, reference ? pack_q4_0_group : pack_q4_0_group_fast);
    case QuantFormat::Q8_0:
      return pack_all<BlockQ8_0, PackedQ8_0>(w, view, out, pool, reference ? pack_q8_0_group : pack_q8_0_group_fast);
    case QuantFormat::Q4_K:
      return pack_all<BlockQ4_K, PackedQ4_K>(w, view, out, pool, reference ? pack_q4_k_group : pack_q4_k_group_fast);
    case QuantFormat::Q5_K:
      return pack_all<BlockQ5_K, PackedQ5_K>(w, view, out, pool, reference ? pack_q5_k_group : pack_q5_k_group_fast);
    case QuantFormat::IQ4_XS:
      return pack_all<BlockIQ4_XS, PackedIQ4_XS>(w, view, out, pool, pack_iq4_xs_group);
    default:
      throw std::invalid_argument("pack_matrix: " + std::string(format_traits(format).name) +
                                  " has no packed layout");
  }
}

PackedWeights pack_weights(QuantFormat format, const void* w, size_t n_out, size_t n_in, ThreadPool* pool) {
  const std::string name(format_traits(format).name);
  if (!has_packed_layout(format)) throw std::invalid_argument("pack_weights: " + name + " has no packed layout");
  const size_t block = format_traits(format).block_elems;
  if (n_in == 0 || n_in % block != 0) {
    throw std::invalid_argument("pack_weights: row length " + std::to_string(n_in) + " of " + name +
                                " weights is not a positive multiple of " + std::to_string(block));
  }
  PackedWeights p;
  p.format_ = format;
  p.n_out_ = n_out;
  p.n_in_ = n_in;
  const detail::PackedView view{format, nullptr, n_out, n_in};
  const size_t bytes = view.groups() * view.blocks_per_row() * detail::packed_block_bytes(format);
  p.chunks_.resize((bytes + sizeof(PackedWeights::Chunk) - 1) / sizeof(PackedWeights::Chunk));
  p.bytes_ = bytes;
  auto* out = p.chunks_.empty() ? nullptr : p.chunks_.front().bytes;
  if (!out) return p;
  std::memset(p.chunks_.back().bytes, 0, sizeof(PackedWeights::Chunk));  // the tail past `bytes`
  detail::pack_matrix(format, w, n_out, n_in, out, pool);
  return p;
}

void matmul(const PackedWeights& w, const QuantizedActivations& x, float* y, ThreadPool& pool) {
  const QuantFormat expected = format_traits(w.format()).activation;
  if (!has_packed_layout(w.format()) || x.format() != expected || x.cols() != w.n_in()) {
    throw std::invalid_argument("matmul: packed " + std::string(format_traits(w.format()).name) + " weights with " +
                                std::to_string(w.n_in()) + " columns need " +
                                std::string(format_traits(expected).name) + " activations of that length, got " +
                                std::string(format_traits(x.format()).name) + " with " +
                                std::to_string(x.cols()));
  }
  if (w.n_out() == 0 || x.rows() == 0) return;
  detail::matmul_packed({w.format(), w.data(), w.n_out(), w.n_in()}, x, y, pool);
}

}  // namespace lamina::quant
