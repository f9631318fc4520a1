// Internal: the packed layouts of lamina/quant/packed.h, and the scalar
// kernels that read them (the reference of the SIMD kernels, and the
// kernels of CPUs without them).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "activations_access.h"
#include "lamina/quant/activations.h"
#include "lamina/quant/blocks.h"
#include "lamina/quant/format.h"
#include "lamina/quant/half.h"
#include "lamina/quant/thread_pool.h"

namespace lamina::quant::detail {

inline constexpr size_t kPackedRows = 16;

// One super-block (256 values) of 16 Q2_K rows. Sub-block j (values 16j ..
// 16j + 15 of the super-block) of row r is the 32-bit word qs[j][4r ..
// 4r + 3]: value 4s + k is bits 2s, 2s + 1 of its byte k. So extracting
// one bit pair of a 64-byte qs[j] gives, in each 32-bit lane, four
// consecutive values of one row, ready for a 4-product dot with four
// consecutive activations. sc[j][r] is row r's scale | min << 4 byte of
// sub-block j, d and dmin its f16 factors. The kernel reads the fields in
// the order they are stored (a stream the hardware prefetch follows).
struct PackedQ2_K {
  uint8_t sc[kQK_K / 16][kPackedRows];
  uint8_t qs[kQK_K / 16][4 * kPackedRows];
  uint16_t d[kPackedRows];
  uint16_t dmin[kPackedRows];
};
static_assert(sizeof(PackedQ2_K) == kPackedRows * sizeof(BlockQ2_K));
static_assert(sizeof(PackedQ2_K) % 64 == 0, "every group starts 64-byte aligned");

// One block (32 values) of 16 Q4_0 rows: the 32-bit word qs[t][4r .. 4r + 3]
// holds values 4t .. 4t + 3 of row r in the low nibbles of its bytes and
// values 16 + 4t .. 16 + 4t + 3 in the high nibbles.
struct PackedQ4_0 {
  uint8_t qs[kQK / 8][4 * kPackedRows];
  uint16_t d[kPackedRows];
};
static_assert(sizeof(PackedQ4_0) == kPackedRows * sizeof(BlockQ4_0));

// One block (32 values) of 16 Q8_0 rows: row r's word of qs[t] holds values
// 4t .. 4t + 3 plus 128 (unsigned, for VNNI). Blocks are not 64-byte
// aligned.
struct PackedQ8_0 {
  uint8_t qs[kQK / 4][4 * kPackedRows];
  uint16_t d[kPackedRows];
};
static_assert(sizeof(PackedQ8_0) == kPackedRows * sizeof(BlockQ8_0));

// One super-block of 16 Q4_K rows. Sub-block s (values 32s .. 32s + 31):
// qs[s][t] holds, in row r's word (bytes 4r .. 4r + 3), values 4t .. 4t + 3
// in the low nibbles and 16 + 4t .. 16 + 4t + 3 in the high ones. The 6-bit
// scales and mins are bytes sc[s][r], mn[s][r] (in the file they share 12
// bytes per row: this layout is 2.8% larger, and saves their unpacking).
struct PackedQ4_K {
  uint8_t sc[kQK_K / 32][kPackedRows];
  uint8_t mn[kQK_K / 32][kPackedRows];
  uint8_t qs[kQK_K / 32][4][4 * kPackedRows];
  uint16_t d[kPackedRows];
  uint16_t dmin[kPackedRows];
};
static_assert(sizeof(PackedQ4_K) == kPackedRows * sizeof(BlockQ4_K) + 64);
static_assert(sizeof(PackedQ4_K) % 64 == 0, "every group starts 64-byte aligned");

// Q5_K: Q4_K's layout plus the fifth bits, each sub-block's just before its
// nibbles (the kernel reads the block in the order it is stored: two
// interleaved streams ran at half the speed from memory). sub[s].qh, row r's
// word: bit t of byte k for value 4t + k, bit 4 + t for value 16 + 4t + k.
// 2.3% larger than the file.
struct PackedQ5_K {
  uint8_t sc[kQK_K / 32][kPackedRows];
  uint8_t mn[kQK_K / 32][kPackedRows];
  struct SubBlock {
    uint8_t qh[4 * kPackedRows];
    uint8_t qs[4][4 * kPackedRows];
  } sub[kQK_K / 32];
  uint16_t d[kPackedRows];
  uint16_t dmin[kPackedRows];
};
static_assert(sizeof(PackedQ5_K) == kPackedRows * sizeof(BlockQ5_K) + 64);
static_assert(sizeof(PackedQ5_K) % 64 == 0, "every group starts 64-byte aligned");

// One super-block of 16 IQ4_XS rows: the codebook indices laid out as Q4_K's
// nibbles, the signed 6-bit scales (minus 32 applied) as bytes, the f16
// factors (1.5% larger than the file; blocks are not 64-byte aligned).
struct PackedIQ4_XS {
  int8_t sc[kQK_K / 32][kPackedRows];
  uint8_t qs[kQK_K / 32][4][4 * kPackedRows];
  uint16_t d[kPackedRows];
};
static_assert(sizeof(PackedIQ4_XS) == kPackedRows * sizeof(BlockIQ4_XS) + 32);

// One super-block of 16 Q3_K rows. Sub-block j (16 values) of pair p = j / 2:
// pair[p].qs[j % 2] holds the low 2 bits as Q2_K's qs[j] does, and
// pair[p].high[j % 2][s] is a 64-bit mask whose bit 4r + k is row r's
// third bit of value 4s + k, i.e. of byte 4r + k once the bit pair s is
// extracted. Stored values are u = low + 4 * high, the value u - 4. The
// signed 6-bit scales are bytes, those of sub-blocks 2p and 2p + 1 side by
// side per row (sc[p][2r], sc[p][2r + 1]). 3.6% larger than the file;
// blocks are not 64-byte aligned.
struct PackedQ3_K {
  int8_t sc[kQK_K / 32][2 * kPackedRows];
  struct Pair {
    uint64_t high[2][4];
    uint8_t qs[2][4 * kPackedRows];
  } pair[kQK_K / 32];
  uint16_t d[kPackedRows];
};
static_assert(sizeof(PackedQ3_K) == kPackedRows * sizeof(BlockQ3_K) + 64);

// Bytes of one packed block (16 rows), for a format with a packed layout.
inline size_t packed_block_bytes(QuantFormat format) {
  switch (format) {
    case QuantFormat::Q2_K: return sizeof(PackedQ2_K);
    case QuantFormat::Q3_K: return sizeof(PackedQ3_K);
    case QuantFormat::Q4_0: return sizeof(PackedQ4_0);
    case QuantFormat::Q8_0: return sizeof(PackedQ8_0);
    case QuantFormat::Q4_K: return sizeof(PackedQ4_K);
    case QuantFormat::Q5_K: return sizeof(PackedQ5_K);
    case QuantFormat::IQ4_XS: return sizeof(PackedIQ4_XS);
    default: return 0;
  }
}

// Packing helpers on 32-bit words (byte k of a word is byte k in memory).
inline uint32_t load_word(const uint8_t* p) {
  uint32_t w;
  std::memcpy(&w, p, 4);
  return w;
}

// Row r's word of packed sub-block j (16 values) from ggml's 2-bit layout
// (Q2_K qs, Q3_K's low bits): each 128-value half is 32 bytes whose bit pair
// n holds values 32n .. 32n + 31, so sub-block j's values are bit pair
// (j % 8) / 2 of 16 consecutive bytes; value 4s + k goes to bits 2s of
// byte k.
inline uint32_t gather_q2_k_sub_block(const uint8_t* qs, size_t j) {
  const uint8_t* src = qs + 32 * (j / 8) + 16 * (j % 2);
  const unsigned shift = static_cast<unsigned>(2 * ((j % 8) / 2));
  uint32_t word = 0;
  for (unsigned s = 0; s < 4; ++s) word |= ((load_word(src + 4 * s) >> shift) & 0x03030303u) << (2 * s);
  return word;
}

// A matrix in a packed layout, as the kernels see it.
struct PackedView {
  QuantFormat format;
  const uint8_t* data;
  size_t n_out;
  size_t n_in;
  size_t groups() const { return (n_out + kPackedRows - 1) / kPackedRows; }
  size_t blocks_per_row() const { return n_in / format_traits(format).block_elems; }
  // Rows of group g that are rows of the matrix (the last group's others
  // are zero padding).
  size_t rows_in_group(size_t g) const {
    return n_out - g * kPackedRows < kPackedRows ? n_out - g * kPackedRows : kPackedRows;
  }
};

// Rows [16 * g, 16 * g + 16) of n_rows rows (blocks_per_row blocks each,
// contiguous) into `out` (blocks_per_row packed blocks); rows past n_rows
// are zero (they contribute 0 and are never stored).
void pack_q2_k_group(const BlockQ2_K* rows, size_t n_rows, size_t blocks_per_row, size_t g, PackedQ2_K* out);
void pack_q3_k_group(const BlockQ3_K* rows, size_t n_rows, size_t blocks_per_row, size_t g, PackedQ3_K* out);
void pack_q4_0_group(const BlockQ4_0* rows, size_t n_rows, size_t blocks_per_row, size_t g, PackedQ4_0* out);
void pack_q8_0_group(const BlockQ8_0* rows, size_t n_rows, size_t blocks_per_row, size_t g, PackedQ8_0* out);
void pack_q4_k_group(const BlockQ4_K* rows, size_t n_rows, size_t blocks_per_row, size_t g, PackedQ4_K* out);
void pack_q5_k_group(const BlockQ5_K* rows, size_t n_rows, size_t blocks_per_row, size_t g, PackedQ5_K* out);
void pack_iq4_xs_group(const BlockIQ4_XS* rows, size_t n_rows, size_t blocks_per_row, size_t g, PackedIQ4_XS* out);

// The same bytes, faster (packed_fast.cc), for the formats most files hold;
// the packers above are their reference.
void pack_q4_0_group_fast(const BlockQ4_0* rows, size_t n_rows, size_t blocks_per_row, size_t g, PackedQ4_0* out);
void pack_q8_0_group_fast(const BlockQ8_0* rows, size_t n_rows, size_t blocks_per_row, size_t g, PackedQ8_0* out);
void pack_q4_k_group_fast(const BlockQ4_K* rows, size_t n_rows, size_t blocks_per_row, size_t g, PackedQ4_K* out);
void pack_q5_k_group_fast(const BlockQ5_K* rows, size_t n_rows, size_t blocks_per_row, size_t g, PackedQ5_K* out);

// Packs n_out rows of n_in values in `format` (a packed format, n_in a
// multiple of its block) into `out` (PackedView::groups() *
// blocks_per_row() * packed_block_bytes(format) bytes), with the fast
// packers where a format has one unless `reference`, with the pool's threads
// if given.
void pack_matrix(QuantFormat format, const void* w, size_t n_out, size_t n_in, uint8_t* out, ThreadPool* pool,
                 bool reference = false);

// acc + sum * d * da (acc - ... with kSubtract) in f64, the SIMD kernels'
// operations on one lane (d an f16 weight factor, da the activation's).
template <bool kSubtract = false>
inline double add_block(double acc, int32_t sum, uint16_t d, float da) {
  const double s = kSubtract ? -static_cast<double>(sum) : static_cast<double>(sum);
  return std::fma(s, static_cast<double>(f16_to_f32(d)) * static_cast<double>(da), acc);
}

// The frame of the packers: zeroes packed block b of the group, then calls
// pack_row(block, r, packed) for block b of row 16 * g + r into it, for the
// rows that exist; block by block, so that each packed block is filled
// while it sits in L1 (row by row, the words of a wide matrix's group
// went out to L2 and came back 16 times).
template <class Packed, class Block, class PackRow>
void pack_group(const Block* rows, size_t n_rows, size_t blocks_per_row, size_t g, Packed* out, PackRow pack_row) {
  const size_t first = g * kPackedRows;
  const size_t n = std::min(kPackedRows, n_rows - first);
  const Block* group = rows + first * blocks_per_row;
  for (size_t b = 0; b < blocks_per_row; ++b) {
    std::memset(&out[b], 0, sizeof(Packed));
    for (size_t r = 0; r < n; ++r) pack_row(group[r * blocks_per_row + b], r, out[b]);
  }
}

// The frame of the scalar kernels: for each row r of group g, the f64 sum
// acc = block(p, r, b, acc) over the row's packed blocks p (b their index),
// stored as y[16 * g + r] in f32.
template <class Packed, class Block>
void scalar_group(const PackedView& w, size_t g, float* y, Block block) {
  const size_t nb = w.blocks_per_row();
  const auto* blocks = reinterpret_cast<const Packed*>(w.data) + g * nb;
  for (size_t r = 0; r < w.rows_in_group(g); ++r) {
    double acc = 0.0;
    for (size_t b = 0; b < nb; ++b) acc = block(blocks[b], r, b, acc);
    y[g * kPackedRows + r] = static_cast<float>(acc);
  }
}

// Outputs 16 * g .. 16 * g + rows_in_group(g) of activation row `a` into
// y[o] for output o, in the scalar form of the SIMD kernel's operations:
// per row, f64 fused multiply-adds of the exact integer block sums, block by
// block, rounded to f32 at the end.
void dot_packed_group_scalar(const PackedView& w, size_t g, const ActivationRow& a, float* y);
void dot_packed_q3_k_group_scalar(const PackedView& w, size_t g, const ActivationRow& a, float* y);
void dot_packed_q4_k_group_scalar(const PackedView& w, size_t g, const ActivationRow& a, float* y);
void dot_packed_q5_k_group_scalar(const PackedView& w, size_t g, const ActivationRow& a, float* y);
void dot_packed_iq4_xs_group_scalar(const PackedView& w, size_t g, const ActivationRow& a, float* y);

// Outputs [begin, end) of every activation row of matmul_as_packed
// (packed.h) in scalar form (matmul_as_packed.cc): the chain of
// dot_packed_q4_k_group_scalar / dot_packed_q5_k_group_scalar on the file's
// rows. Q4_K or Q5_K only.
void matmul_as_packed_scalar(QuantFormat format, const void* w, size_t n_out, size_t n_in,
                             const QuantizedActivations& x, float* y, size_t begin, size_t end);

// The dynamically dispatched entries (matmul_packed.cc): whether the best
// target of this CPU has a SIMD kernel for the packed `format`, and the
// matmul of a packed matrix.
bool packed_simd_kernel(QuantFormat format);
void matmul_packed(const PackedView& w, const QuantizedActivations& x, float* y, ThreadPool& pool);

}  // namespace lamina::quant::detail
