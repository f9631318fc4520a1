// Faster packers of the same bytes as those of packed.cc and
// packed_kquants.cc (the references; tests/quant/kernel_packed_test.cc
// compares them) for the formats that most files hold: whole 32- and 64-bit
// words through registers instead of a byte or a helper call per value, so
// packing keeps up with reading the file.
#include <cstring>

#include "packed_layout.h"

namespace lamina::quant::detail {

namespace {

uint64_t load_u64(const uint8_t* p) {
  uint64_t w;
  std::memcpy(&w, p, 8);
  return w;
}

void store_word(uint8_t* p, uint32_t w) { std::memcpy(p, &w, 4); }

// The two 32-bit words of v in memory order.
void store_words(uint8_t* lo, uint8_t* hi, uint64_t v) {
  uint8_t bytes[8];
  std::memcpy(bytes, &v, 8);
  std::memcpy(lo, bytes, 4);
  std::memcpy(hi, bytes + 4, 4);
}

// Byte k of w in memory order.
uint8_t byte_of(uint32_t w, size_t k) {
  uint8_t bytes[4];
  std::memcpy(bytes, &w, 4);
  return bytes[k];
}

constexpr uint64_t kLowNibbles = 0x0F0F0F0F0F0F0F0Full;
constexpr uint64_t kBit0 = 0x0101010101010101ull;

// Q4_K's and Q5_K's shared fields (pack_common of packed_kquants.cc): the
// 6-bit scales and mins of all 8 sub-blocks from the 12 scale bytes at once
// (bytes 0-3 hold the low 6 bits of scales 0-3 and their top 2 bits of
// scales 4-7, bytes 4-7 the same for the mins, bytes 8-11 the low nibbles of
// scales and mins 4-7), and each pair of sub-blocks' nibbles 8 bytes at a
// time.
template <class Packed, class Block>
void pack_k4_common(const Block& in, size_t r, Packed& p, uint8_t* (*nibble_word)(Packed&, size_t, size_t)) {
  p.d[r] = in.d;
  p.dmin[r] = in.dmin;
  const uint32_t a = load_word(in.scales);
  const uint32_t b = load_word(in.scales + 4);
  const uint32_t c = load_word(in.scales + 8);
  const uint32_t sc_low = a & 0x3F3F3F3Fu;
  const uint32_t mn_low = b & 0x3F3F3F3Fu;
  const uint32_t sc_high = (c & 0x0F0F0F0Fu) | ((a >> 2) & 0x30303030u);
  const uint32_t mn_high = ((c >> 4) & 0x0F0F0F0Fu) | ((b >> 2) & 0x30303030u);
  for (size_t k = 0; k < 4; ++k) {
    p.sc[k][r] = byte_of(sc_low, k);
    p.mn[k][r] = byte_of(mn_low, k);
    p.sc[4 + k][r] = byte_of(sc_high, k);
    p.mn[4 + k][r] = byte_of(mn_high, k);
  }
  for (size_t pair = 0; pair < kQK_K / 64; ++pair) {
    const uint8_t* src = in.qs + 32 * pair;
    for (size_t half = 0; half < 2; ++half) {  // words 0-1, then 2-3
      const uint64_t first = load_u64(src + 8 * half);
      const uint64_t second = load_u64(src + 16 + 8 * half);
      const uint64_t even = (first & kLowNibbles) | (second & kLowNibbles) << 4;
      const uint64_t odd = ((first >> 4) & kLowNibbles) | (second & ~kLowNibbles);
      store_words(nibble_word(p, 2 * pair, 2 * half) + 4 * r, nibble_word(p, 2 * pair, 2 * half + 1) + 4 * r, even);
      store_words(nibble_word(p, 2 * pair + 1, 2 * half) + 4 * r, nibble_word(p, 2 * pair + 1, 2 * half + 1) + 4 * r,
                  odd);
    }
  }
}

uint8_t* q4_k_word(PackedQ4_K& p, size_t s, size_t t) { return p.qs[s][t]; }
uint8_t* q5_k_word(PackedQ5_K& p, size_t s, size_t t) { return p.sub[s].qs[t]; }

}  // namespace

void pack_q4_0_group_fast(const BlockQ4_0* rows, size_t n_rows, size_t blocks_per_row, size_t g, PackedQ4_0* out) {
  pack_group(rows, n_rows, blocks_per_row, g, out, [](const BlockQ4_0& in, size_t r, PackedQ4_0& p) {
    p.d[r] = in.d;
    for (size_t t = 0; t < kQK / 8; ++t) store_word(p.qs[t] + 4 * r, load_word(in.qs + 4 * t));
  });
}

void pack_q8_0_group_fast(const BlockQ8_0* rows, size_t n_rows, size_t blocks_per_row, size_t g, PackedQ8_0* out) {
  pack_group(rows, n_rows, blocks_per_row, g, out, [](const BlockQ8_0& in, size_t r, PackedQ8_0& p) {
    p.d[r] = in.d;
    const auto* qs = reinterpret_cast<const uint8_t*>(in.qs);
    // q + 128 of a two's complement byte is its top bit flipped.
    for (size_t t = 0; t < kQK / 4; ++t) store_word(p.qs[t] + 4 * r, load_word(qs + 4 * t) ^ 0x80808080u);
  });
}

void pack_q4_k_group_fast(const BlockQ4_K* rows, size_t n_rows, size_t blocks_per_row, size_t g, PackedQ4_K* out) {
  pack_group(rows, n_rows, blocks_per_row, g, out,
             [](const BlockQ4_K& in, size_t r, PackedQ4_K& p) { pack_k4_common(in, r, p, q4_k_word); });
}

void pack_q5_k_group_fast(const BlockQ5_K* rows, size_t n_rows, size_t blocks_per_row, size_t g, PackedQ5_K* out) {
  pack_group(rows, n_rows, blocks_per_row, g, out, [](const BlockQ5_K& in, size_t r, PackedQ5_K& p) {
    pack_k4_common(in, r, p, q5_k_word);
    // Bit s of qh[i] is the fifth bit of value i of sub-block s; row r's
    // word of sub-block s has, in byte k, the bits of qh[4t + k] at t and
    // those of qh[16 + 4t + k] at 4 + t (t = 0..3). Per 64-bit load, the
    // low half holds t = 0 or 2 and the high half t = 1 or 3: shifted into
    // place, the high half lands one bit above the low one.
    const uint64_t q0 = load_u64(in.qh);
    const uint64_t q1 = load_u64(in.qh + 8);
    const uint64_t q2 = load_u64(in.qh + 16);
    const uint64_t q3 = load_u64(in.qh + 24);
    for (size_t s = 0; s < kQK_K / 32; ++s) {
      const uint64_t both = ((q0 >> s) & kBit0) | ((q1 >> s) & kBit0) << 2 | ((q2 >> s) & kBit0) << 4 |
                            ((q3 >> s) & kBit0) << 6;
      uint32_t halves[2];
      std::memcpy(halves, &both, 8);
      store_word(p.sub[s].qh + 4 * r, halves[0] | halves[1] << 1);
    }
  });
}

}  // namespace lamina::quant::detail
