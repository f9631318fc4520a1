// Packing and scalar kernels of the packed Q3_K, Q4_K, Q5_K and IQ4_XS
// layouts (packed_layout.h).
#include <cmath>
#include <cstring>

#include "lamina/quant/half.h"
#include "packed_layout.h"
#include "reference_rows.h"

namespace lamina::quant::detail {

namespace {

// The nibble bytes of sub-block s.
uint8_t (&nibbles(PackedQ4_K& p, size_t s))[4][4 * kPackedRows] { return p.qs[s]; }
uint8_t (&nibbles(PackedQ5_K& p, size_t s))[4][4 * kPackedRows] { return p.sub[s].qs; }

// Sub-block fields shared by both formats.
template <class Packed, class Block>
void pack_common(const Block& in, size_t r, Packed& p) {
  p.d[r] = in.d;
  p.dmin[r] = in.dmin;
  for (size_t s = 0; s < kQK_K / 32; ++s) {
    ref::unpack_k4_scale_min(in.scales, static_cast<int>(s), p.sc[s][r], p.mn[s][r]);
    // Sub-blocks 2p and 2p + 1 share 32 bytes: the low nibbles hold the
    // first one's values, the high nibbles the second's.
    const uint8_t* src = in.qs + 32 * (s / 2);
    for (size_t t = 0; t < 4; ++t) {
      const uint32_t first = load_word(src + 4 * t);
      const uint32_t second = load_word(src + 16 + 4 * t);
      const uint32_t word = s % 2 == 0 ? (first & 0x0F0F0F0Fu) | (second & 0x0F0F0F0Fu) << 4
                                       : ((first >> 4) & 0x0F0F0F0Fu) | (second & 0xF0F0F0F0u);
      std::memcpy(nibbles(p, s)[t] + 4 * r, &word, 4);
    }
  }
}

// Value i (0..31) of sub-block s of row r.
unsigned q4_k_value(const PackedQ4_K& p, size_t s, size_t r, size_t i) {
  const uint8_t byte = p.qs[s][(i % 16) / 4][4 * r + i % 4];
  return i < 16 ? byte & 15u : byte >> 4;
}
unsigned q5_k_value(const PackedQ5_K& p, size_t s, size_t r, size_t i) {
  const size_t t = (i % 16) / 4;
  const uint8_t byte = p.sub[s].qs[t][4 * r + i % 4];
  const unsigned high = (p.sub[s].qh[4 * r + i % 4] >> (i < 16 ? t : 4 + t)) & 1u;
  return (i < 16 ? byte & 15u : byte >> 4) | high << 4;
}

// Q4_K and Q5_K: exact integer sums per super-block, scaled in f64.
template <class Packed, class Value>
void dot_group(const PackedView& w, size_t g, const ActivationRow& a, float* y, Value value) {
  scalar_group<Packed>(w, g, y, [&](const Packed& p, size_t r, size_t b, double acc) {
    int32_t isum = 0;
    int32_t msum = 0;
    for (size_t s = 0; s < kQK_K / 32; ++s) {
      int32_t sub = 0;
      for (size_t i = 0; i < 32; ++i) {
        sub += static_cast<int32_t>(value(p, s, r, i)) * a.values[kQK_K * b + 32 * s + i];
      }
      isum += p.sc[s][r] * sub;
      msum += p.mn[s][r] * (a.group_sums[16 * b + 2 * s] + a.group_sums[16 * b + 2 * s + 1]);
    }
    const float da = a.scales[b];
    return add_block<true>(add_block(acc, isum, p.d[r], da), msum, p.dmin[r], da);
  });
}

void dot_iq4_xs(const PackedView& w, size_t g, const ActivationRow& a, float* y) {
  scalar_group<PackedIQ4_XS>(w, g, y, [&](const PackedIQ4_XS& p, size_t r, size_t b, double acc) {
    int32_t isum = 0;
    for (size_t s = 0; s < kQK_K / 32; ++s) {
      int32_t sub = 0;
      for (size_t i = 0; i < 32; ++i) {
        const uint8_t byte = p.qs[s][(i % 16) / 4][4 * r + i % 4];
        sub += kIQ4NLValues[i < 16 ? byte & 15 : byte >> 4] * a.values[kQK_K * b + 32 * s + i];
      }
      isum += p.sc[s][r] * sub;
    }
    return add_block(acc, isum, p.d[r], a.scales[b]);
  });
}

void dot_q3_k(const PackedView& w, size_t g, const ActivationRow& a, float* y) {
  scalar_group<PackedQ3_K>(w, g, y, [&](const PackedQ3_K& p, size_t r, size_t b, double acc) {
    int32_t isum = 0;
    for (size_t j = 0; j < kQK_K / 16; ++j) {
      const PackedQ3_K::Pair& pair = p.pair[j / 2];
      // The stored values are u - 4: start from -4 times the group sum.
      int32_t sub = -4 * a.group_sums[16 * b + j];
      for (size_t v = 0; v < 16; ++v) {
        const size_t s = v / 4;
        const size_t byte = 4 * r + v % 4;
        const int low = (pair.qs[j % 2][byte] >> (2 * s)) & 3;
        const int high = static_cast<int>((pair.high[j % 2][s] >> byte) & 1);
        sub += (low + 4 * high) * a.values[kQK_K * b + 16 * j + v];
      }
      isum += p.sc[j / 2][2 * r + j % 2] * sub;
    }
    return add_block(acc, isum, p.d[r], a.scales[b]);
  });
}

}  // namespace

void pack_q3_k_group(const BlockQ3_K* rows, size_t n_rows, size_t blocks_per_row, size_t g, PackedQ3_K* out) {
  pack_group(rows, n_rows, blocks_per_row, g, out, [](const BlockQ3_K& in, size_t r, PackedQ3_K& p) {
    p.d[r] = in.d;
    for (size_t j = 0; j < kQK_K / 16; ++j) {
      PackedQ3_K::Pair& pair = p.pair[j / 2];
      p.sc[j / 2][2 * r + j % 2] = static_cast<int8_t>(ref::unpack_q3k_scale(in.scales, static_cast<int>(j)));
      const uint32_t low = gather_q2_k_sub_block(in.qs, j);
      std::memcpy(pair.qs[j % 2] + 4 * r, &low, 4);
      // Value i's third bit is bit i / 32 of hmask[i % 32].
      for (size_t s = 0; s < 4; ++s) {
        const uint32_t bits = (load_word(in.hmask + 16 * (j % 2) + 4 * s) >> (j / 2)) & 0x01010101u;
        const uint64_t nibble = (bits | bits >> 7 | bits >> 14 | bits >> 21) & 0xFu;
        pair.high[j % 2][s] |= nibble << (4 * r);
      }
    }
  });
}

void dot_packed_q3_k_group_scalar(const PackedView& w, size_t g, const ActivationRow& a, float* y) {
  dot_q3_k(w, g, a, y);
}

void pack_q4_k_group(const BlockQ4_K* rows, size_t n_rows, size_t blocks_per_row, size_t g, PackedQ4_K* out) {
  pack_group(rows, n_rows, blocks_per_row, g, out,
             [](const BlockQ4_K& in, size_t r, PackedQ4_K& p) { pack_common(in, r, p); });
}

void pack_q5_k_group(const BlockQ5_K* rows, size_t n_rows, size_t blocks_per_row, size_t g, PackedQ5_K* out) {
  pack_group(rows, n_rows, blocks_per_row, g, out, [](const BlockQ5_K& in, size_t r, PackedQ5_K& p) {
    pack_common(in, r, p);
    // Bit s of qh[i] is the fifth bit of value i of sub-block s.
    for (size_t s = 0; s < kQK_K / 32; ++s) {
      uint32_t word = 0;
      for (unsigned t = 0; t < 4; ++t) {
        word |= ((load_word(in.qh + 4 * t) >> s) & 0x01010101u) << t;
        word |= ((load_word(in.qh + 16 + 4 * t) >> s) & 0x01010101u) << (4 + t);
      }
      std::memcpy(p.sub[s].qh + 4 * r, &word, 4);
    }
  });
}

void pack_iq4_xs_group(const BlockIQ4_XS* rows, size_t n_rows, size_t blocks_per_row, size_t g, PackedIQ4_XS* out) {
  pack_group(rows, n_rows, blocks_per_row, g, out, [](const BlockIQ4_XS& in, size_t r, PackedIQ4_XS& p) {
    p.d[r] = in.d;
    for (size_t s = 0; s < kQK_K / 32; ++s) {
      const int low = (in.scales_l[s / 2] >> (4 * (s % 2))) & 0xF;
      const int high = (in.scales_h >> (2 * s)) & 3;
      p.sc[s][r] = static_cast<int8_t>((low | (high << 4)) - 32);
      // The file's sub-block: byte j holds values j (low nibble) and 16 + j.
      for (size_t j = 0; j < 16; ++j) p.qs[s][j / 4][4 * r + j % 4] = in.qs[16 * s + j];
    }
  });
}

void dot_packed_iq4_xs_group_scalar(const PackedView& w, size_t g, const ActivationRow& a, float* y) {
  dot_iq4_xs(w, g, a, y);
}

void dot_packed_q4_k_group_scalar(const PackedView& w, size_t g, const ActivationRow& a, float* y) {
  dot_group<PackedQ4_K>(w, g, a, y, q4_k_value);
}

void dot_packed_q5_k_group_scalar(const PackedView& w, size_t g, const ActivationRow& a, float* y) {
  dot_group<PackedQ5_K>(w, g, a, y, q5_k_value);
}

}  // namespace lamina::quant::detail
