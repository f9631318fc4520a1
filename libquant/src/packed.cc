// Packing of weight matrices, the scalar kernel of the packed layouts, and
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

// Value i (0..255) of a Q2_K super-block: 2 bits of qs, as ggml lays them
// out (each 128-value half: 32 bytes, bit pair n holding values 32n ..
// 32n + 31).
unsigned q2_k_value(const BlockQ2_K& b, size_t i) {
  const size_t half = i / 128;
  const size_t k = i % 128;
  return (b.qs[32 * half + k % 32] >> (2 * (k / 32))) & 3u;
}

}  // namespace

void pack_q2_k_group(const BlockQ2_K* rows, size_t n_rows, size_t blocks_per_row, size_t g, PackedQ2_K* out) {
  std::memset(out, 0, blocks_per_row * sizeof(PackedQ2_K));
  for (size_t r = 0; r < kPackedRows && g * kPackedRows + r < n_rows; ++r) {
    const BlockQ2_K* row = rows + (g * kPackedRows + r) * blocks_per_row;
    for (size_t b = 0; b < blocks_per_row; ++b) {
      PackedQ2_K& p = out[b];
      p.d[r] = row[b].d;
      p.dmin[r] = row[b].dmin;
      for (size_t j = 0; j < kQK_K / 16; ++j) {
        p.sc[j][r] = row[b].scales[j];
        for (size_t v = 0; v < 16; ++v) {
          const size_t s = v / 4;
          const size_t k = v % 4;
          p.qs[j][4 * r + k] |= static_cast<uint8_t>(q2_k_value(row[b], 16 * j + v) << (2 * s));
        }
      }
    }
  }
}

void dot_packed_q2_k_scalar(const PackedView& w, size_t g, const ActivationRow& a, float* y) {
  const size_t nb = w.blocks_per_row();
  const auto* blocks = reinterpret_cast<const PackedQ2_K*>(w.data) + g * nb;
  for (size_t r = 0; r < kPackedRows && g * kPackedRows + r < w.n_out; ++r) {
    float acc = 0.0f;
    for (size_t b = 0; b < nb; ++b) {
      const PackedQ2_K& p = blocks[b];
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
      acc = std::fma(static_cast<float>(isum), f16_to_f32(p.d[r]) * da, acc);
      acc = std::fma(-static_cast<float>(msum), f16_to_f32(p.dmin[r]) * da, acc);
    }
    y[g * kPackedRows + r] = acc;
  }
}

}  // namespace detail

bool has_packed_layout(QuantFormat format) { return format == QuantFormat::Q2_K; }

bool packed_layout_is_faster(QuantFormat format) {
  return has_packed_layout(format) && detail::packed_simd_kernel(format);
}

PackedWeights pack_weights(QuantFormat format, const void* w, size_t n_out, size_t n_in, ThreadPool* pool) {
  const std::string name(format_traits(format).name);
  if (!has_packed_layout(format)) throw std::invalid_argument("pack_weights: " + name + " has no packed layout");
  if (n_in == 0 || n_in % kQK_K != 0) {
    throw std::invalid_argument("pack_weights: row length " + std::to_string(n_in) + " of " + name +
                                " weights is not a positive multiple of " + std::to_string(kQK_K));
  }
  PackedWeights p;
  p.format_ = format;
  p.n_out_ = n_out;
  p.n_in_ = n_in;
  const detail::PackedView view{nullptr, n_out, n_in};
  const size_t group_bytes = view.blocks_per_row() * sizeof(detail::PackedQ2_K);
  p.chunks_.resize(view.groups() * group_bytes / sizeof(PackedWeights::Chunk));
  const auto pack_groups = [&](size_t begin, size_t end) {
    for (size_t g = begin; g < end; ++g) {
      auto* out = reinterpret_cast<detail::PackedQ2_K*>(p.chunks_.data()) + g * view.blocks_per_row();
      detail::pack_q2_k_group(static_cast<const BlockQ2_K*>(w), n_out, view.blocks_per_row(), g, out);
    }
  };
  if (pool) {
    pool->parallel_for(view.groups(), 1, pack_groups);
  } else {
    pack_groups(0, view.groups());
  }
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
  detail::matmul_packed_q2_k({w.data(), w.n_out(), w.n_in()}, x, y, pool);
}

}  // namespace lamina::quant
