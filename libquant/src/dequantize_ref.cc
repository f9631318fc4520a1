// Scalar dequantization, bit-exact with ggml: every product is formed in the
// same order and rounded to f32 the same way (this file is built without
// multiply-add contraction).
#include <array>
#include <cstring>
#include <stdexcept>
#include <string>

#include "lamina/quant/half.h"
#include "lamina/quant/reference.h"
#include "reference_rows.h"

namespace lamina::quant::ref {

void dequantize_q4_0(const BlockQ4_0* blocks, size_t nblocks, float* out) {
  for (size_t b = 0; b < nblocks; ++b, out += kQK) {
    const float d = f16_to_f32(blocks[b].d);
    for (int j = 0; j < kQK / 2; ++j) {
      out[j] = static_cast<float>((blocks[b].qs[j] & 0xF) - 8) * d;
      out[j + kQK / 2] = static_cast<float>((blocks[b].qs[j] >> 4) - 8) * d;
    }
  }
}

void dequantize_q4_1(const BlockQ4_1* blocks, size_t nblocks, float* out) {
  for (size_t b = 0; b < nblocks; ++b, out += kQK) {
    const float d = f16_to_f32(blocks[b].d);
    const float m = f16_to_f32(blocks[b].m);
    for (int j = 0; j < kQK / 2; ++j) {
      out[j] = static_cast<float>(blocks[b].qs[j] & 0xF) * d + m;
      out[j + kQK / 2] = static_cast<float>(blocks[b].qs[j] >> 4) * d + m;
    }
  }
}

namespace {

// The 5-bit value j (0..31) of a Q5 block: nibble from qs, bit 4 from qh.
int q5_value(const uint8_t* qs, const uint8_t* qh_bytes, int j) {
  uint32_t qh;
  std::memcpy(&qh, qh_bytes, sizeof(qh));
  const int nibble = j < kQK / 2 ? qs[j] & 0xF : qs[j - kQK / 2] >> 4;
  return nibble | static_cast<int>(((qh >> j) & 1u) << 4);
}

}  // namespace

void dequantize_q5_0(const BlockQ5_0* blocks, size_t nblocks, float* out) {
  for (size_t b = 0; b < nblocks; ++b, out += kQK) {
    const float d = f16_to_f32(blocks[b].d);
    for (int j = 0; j < kQK; ++j) {
      out[j] = static_cast<float>(q5_value(blocks[b].qs, blocks[b].qh, j) - 16) * d;
    }
  }
}

void dequantize_q5_1(const BlockQ5_1* blocks, size_t nblocks, float* out) {
  for (size_t b = 0; b < nblocks; ++b, out += kQK) {
    const float d = f16_to_f32(blocks[b].d);
    const float m = f16_to_f32(blocks[b].m);
    for (int j = 0; j < kQK; ++j) {
      out[j] = static_cast<float>(q5_value(blocks[b].qs, blocks[b].qh, j)) * d + m;
    }
  }
}

void dequantize_q8_0(const BlockQ8_0* blocks, size_t nblocks, float* out) {
  for (size_t b = 0; b < nblocks; ++b, out += kQK) {
    const float d = f16_to_f32(blocks[b].d);
    for (int j = 0; j < kQK; ++j) out[j] = static_cast<float>(blocks[b].qs[j]) * d;
  }
}

void dequantize_q8_1(const BlockQ8_1* blocks, size_t nblocks, float* out) {
  for (size_t b = 0; b < nblocks; ++b, out += kQK) {
    const float d = f16_to_f32(blocks[b].d);
    for (int j = 0; j < kQK; ++j) out[j] = static_cast<float>(blocks[b].qs[j]) * d;
  }
}

// Q2_K and Q3_K pack four 2-bit values per byte: value i of a 128-value half
// sits in byte (i % 32) of that half's 32 bytes, at bit 2 * (i / 32).
void dequantize_q2_k(const BlockQ2_K* blocks, size_t nblocks, float* out) {
  for (size_t b = 0; b < nblocks; ++b, out += kQK_K) {
    const BlockQ2_K& blk = blocks[b];
    const float d = f16_to_f32(blk.d);
    const float dmin = f16_to_f32(blk.dmin);
    for (int i = 0; i < kQK_K; ++i) {
      const uint8_t sc = blk.scales[i / 16];
      const float dl = d * static_cast<float>(sc & 0xF);
      const float ml = dmin * static_cast<float>(sc >> 4);
      const int q = (blk.qs[(i / 128) * 32 + i % 32] >> (2 * ((i % 128) / 32))) & 3;
      out[i] = dl * static_cast<float>(q) - ml;
    }
  }
}

void dequantize_q3_k(const BlockQ3_K* blocks, size_t nblocks, float* out) {
  for (size_t b = 0; b < nblocks; ++b, out += kQK_K) {
    const BlockQ3_K& blk = blocks[b];
    const float d = f16_to_f32(blk.d);
    for (int i = 0; i < kQK_K; ++i) {
      const float dl = d * static_cast<float>(unpack_q3k_scale(blk.scales, i / 16));
      const int shift = 2 * ((i % 128) / 32);
      const int low = (blk.qs[(i / 128) * 32 + i % 32] >> shift) & 3;
      // hmask bit (i / 32) of byte (i % 32); a clear bit means "minus 4".
      const bool high = (blk.hmask[i % 32] >> (i / 32)) & 1;
      out[i] = dl * static_cast<float>(low - (high ? 0 : 4));
    }
  }
}

// Q4_K/Q5_K: each 64 values share 32 bytes of qs; the first 32 use the low
// nibbles, the next 32 the high nibbles.
void dequantize_q4_k(const BlockQ4_K* blocks, size_t nblocks, float* out) {
  for (size_t b = 0; b < nblocks; ++b, out += kQK_K) {
    const BlockQ4_K& blk = blocks[b];
    const float d = f16_to_f32(blk.d);
    const float dmin = f16_to_f32(blk.dmin);
    for (int sub = 0; sub < 8; ++sub) {
      uint8_t sc, m;
      unpack_k4_scale_min(blk.scales, sub, sc, m);
      const float dl = d * static_cast<float>(sc);
      const float ml = dmin * static_cast<float>(m);
      const uint8_t* qs = blk.qs + (sub / 2) * 32;
      const int shift = (sub % 2) * 4;
      for (int l = 0; l < 32; ++l) {
        out[sub * 32 + l] = dl * static_cast<float>((qs[l] >> shift) & 0xF) - ml;
      }
    }
  }
}

void dequantize_q5_k(const BlockQ5_K* blocks, size_t nblocks, float* out) {
  for (size_t b = 0; b < nblocks; ++b, out += kQK_K) {
    const BlockQ5_K& blk = blocks[b];
    const float d = f16_to_f32(blk.d);
    const float dmin = f16_to_f32(blk.dmin);
    for (int sub = 0; sub < 8; ++sub) {
      uint8_t sc, m;
      unpack_k4_scale_min(blk.scales, sub, sc, m);
      const float dl = d * static_cast<float>(sc);
      const float ml = dmin * static_cast<float>(m);
      const uint8_t* qs = blk.qs + (sub / 2) * 32;
      const int shift = (sub % 2) * 4;
      for (int l = 0; l < 32; ++l) {
        const int q = ((qs[l] >> shift) & 0xF) | (((blk.qh[l] >> sub) & 1) << 4);
        out[sub * 32 + l] = dl * static_cast<float>(q) - ml;
      }
    }
  }
}

// Q6_K: per 128 values, 64 bytes of ql (low nibbles of values 0..63, high
// nibbles of 64..127) and 32 bytes of qh (2 bits for each of 4 values).
void dequantize_q6_k(const BlockQ6_K* blocks, size_t nblocks, float* out) {
  for (size_t b = 0; b < nblocks; ++b, out += kQK_K) {
    const BlockQ6_K& blk = blocks[b];
    const float d = f16_to_f32(blk.d);
    for (int i = 0; i < kQK_K; ++i) {
      const int half = i / 128;
      const int r = i % 128;
      const uint8_t* ql = blk.ql + half * 64;
      const uint8_t* qh = blk.qh + half * 32;
      const int low = (ql[r % 64] >> (4 * (r / 64))) & 0xF;
      const int high = (qh[r % 32] >> (2 * (r / 32))) & 3;
      const int q = (low | (high << 4)) - 32;
      out[i] = d * static_cast<float>(blk.scales[i / 16]) * static_cast<float>(q);
    }
  }
}

void dequantize_q8_k(const BlockQ8_K* blocks, size_t nblocks, float* out) {
  for (size_t b = 0; b < nblocks; ++b, out += kQK_K) {
    for (int j = 0; j < kQK_K; ++j) out[j] = blocks[b].d * static_cast<float>(blocks[b].qs[j]);
  }
}

namespace {

// 32 nibble codes (value j low in byte j, j + 16 high) into `table`, times d.
void dequantize_codes(const uint8_t* qs, float d, const std::array<int8_t, 16>& table, float* out) {
  for (int j = 0; j < kQK / 2; ++j) {
    out[j] = d * static_cast<float>(table[qs[j] & 0xF]);
    out[j + kQK / 2] = d * static_cast<float>(table[qs[j] >> 4]);
  }
}

}  // namespace

void dequantize_iq4_nl(const BlockIQ4_NL* blocks, size_t nblocks, float* out) {
  for (size_t b = 0; b < nblocks; ++b, out += kQK)
    dequantize_codes(blocks[b].qs, f16_to_f32(blocks[b].d), kIQ4NLValues, out);
}

void dequantize_iq4_xs(const BlockIQ4_XS* blocks, size_t nblocks, float* out) {
  for (size_t b = 0; b < nblocks; ++b, out += kQK_K) {
    const BlockIQ4_XS& blk = blocks[b];
    const float d = f16_to_f32(blk.d);
    for (int sub = 0; sub < 8; ++sub) {
      const int low = (blk.scales_l[sub / 2] >> (4 * (sub % 2))) & 0xF;
      const int high = (blk.scales_h >> (2 * sub)) & 3;
      const float dl = d * static_cast<float>((low | (high << 4)) - 32);
      dequantize_codes(blk.qs + sub * 16, dl, kIQ4NLValues, out + sub * 32);
    }
  }
}

void dequantize_mxfp4(const BlockMXFP4* blocks, size_t nblocks, float* out) {
  for (size_t b = 0; b < nblocks; ++b, out += kQK)
    dequantize_codes(blocks[b].qs, e8m0_to_f32_half(blocks[b].e), kMXFP4Values, out);
}

}  // namespace lamina::quant::ref

namespace lamina::quant {

void dequantize_row_ref(QuantFormat format, const void* src, float* dst, size_t n) {
  using namespace ref;
  const size_t nblocks = block_count(format, n);
  switch (format) {
    case QuantFormat::F32:
      std::memcpy(dst, src, n * sizeof(float));
      return;
    case QuantFormat::F16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = f16_to_f32(h[i]);
      return;
    }
    case QuantFormat::BF16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(h[i]);
      return;
    }
    case QuantFormat::Q4_0: return dequantize_q4_0(static_cast<const BlockQ4_0*>(src), nblocks, dst);
    case QuantFormat::Q4_1: return dequantize_q4_1(static_cast<const BlockQ4_1*>(src), nblocks, dst);
    case QuantFormat::Q5_0: return dequantize_q5_0(static_cast<const BlockQ5_0*>(src), nblocks, dst);
    case QuantFormat::Q5_1: return dequantize_q5_1(static_cast<const BlockQ5_1*>(src), nblocks, dst);
    case QuantFormat::Q8_0: return dequantize_q8_0(static_cast<const BlockQ8_0*>(src), nblocks, dst);
    case QuantFormat::Q8_1: return dequantize_q8_1(static_cast<const BlockQ8_1*>(src), nblocks, dst);
    case QuantFormat::Q2_K: return dequantize_q2_k(static_cast<const BlockQ2_K*>(src), nblocks, dst);
    case QuantFormat::Q3_K: return dequantize_q3_k(static_cast<const BlockQ3_K*>(src), nblocks, dst);
    case QuantFormat::Q4_K: return dequantize_q4_k(static_cast<const BlockQ4_K*>(src), nblocks, dst);
    case QuantFormat::Q5_K: return dequantize_q5_k(static_cast<const BlockQ5_K*>(src), nblocks, dst);
    case QuantFormat::Q6_K: return dequantize_q6_k(static_cast<const BlockQ6_K*>(src), nblocks, dst);
    case QuantFormat::Q8_K: return dequantize_q8_k(static_cast<const BlockQ8_K*>(src), nblocks, dst);
    case QuantFormat::IQ4_NL: return dequantize_iq4_nl(static_cast<const BlockIQ4_NL*>(src), nblocks, dst);
    case QuantFormat::IQ4_XS: return dequantize_iq4_xs(static_cast<const BlockIQ4_XS*>(src), nblocks, dst);
    case QuantFormat::MXFP4: return dequantize_mxfp4(static_cast<const BlockMXFP4*>(src), nblocks, dst);
  }
  throw std::invalid_argument("dequantize_row_ref: unknown format " +
                              std::to_string(static_cast<uint32_t>(format)));
}

}  // namespace lamina::quant
