// Reference quantizers of the K-quants (Q2_K..Q6_K): each sub-block gets its
// own searched scale (and min), the scales are then quantized against one
// f16 super-block scale, and the values are requantized with the stored
// scales so that the bytes describe exactly what dequantization will give.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "lamina/quant/half.h"
#include "reference_rows.h"
#include "scale_search.h"

namespace lamina::quant::ref {
namespace {

// Q2_K/Q3_K layout: four 2-bit values per byte, value i of each 128-value
// half at byte i % 32 of the half, bits 2 * (i / 32).
void pack_2bit(const uint8_t* levels, uint8_t* qs) {
  for (int half = 0; half < kQK_K / 128; ++half) {
    const uint8_t* L = levels + half * 128;
    for (int l = 0; l < 32; ++l) {
      qs[half * 32 + l] =
          static_cast<uint8_t>(L[l] | (L[l + 32] << 2) | (L[l + 64] << 4) | (L[l + 96] << 6));
    }
  }
}

// Q4_K/Q5_K: eight 6-bit scales and mins into 12 bytes (see
// unpack_k4_scale_min for the layout).
void pack_k4_scales(const uint8_t* scales, const uint8_t* mins, uint8_t* packed) {
  for (int j = 0; j < 8; ++j) {
    if (j < 4) {
      packed[j] = scales[j];
      packed[j + 4] = mins[j];
    } else {
      packed[j + 4] = static_cast<uint8_t>((scales[j] & 0xF) | ((mins[j] & 0xF) << 4));
      packed[j - 4] = static_cast<uint8_t>(packed[j - 4] | ((scales[j] >> 4) << 6));
      packed[j] = static_cast<uint8_t>(packed[j] | ((mins[j] >> 4) << 6));
    }
  }
}

// Shared by Q4_K and Q5_K: per 32-value sub-block, weights |x| + rms(x),
// then the scale/min search; scales and mins quantized to 6 bits against
// their maxima; finally the levels for the stored scales. Returns L in
// [0, nmax] for all 256 values.
void quantize_k4_family(const float* x, int nmax, float rmin, float rdelta, int nstep,
                        uint16_t& d_out, uint16_t& dmin_out, uint8_t* packed_scales, uint8_t* L) {
  float scales[8];
  float mins[8];
  float weights[32];
  float max_scale = 0.0f;
  float max_min = 0.0f;
  for (int j = 0; j < 8; ++j) {
    const float* xb = x + 32 * j;
    float sum_x2 = 0.0f;
    for (int l = 0; l < 32; ++l) sum_x2 += xb[l] * xb[l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(xb[l]);
    scales[j] = search_scale_and_min(32, nmax, xb, weights, L + 32 * j, mins[j], rmin, rdelta, nstep,
                                     false);
    max_scale = std::max(max_scale, scales[j]);
    max_min = std::max(max_min, mins[j]);
  }

  const float inv_scale = max_scale > 0.0f ? 63.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0.0f ? 63.0f / max_min : 0.0f;
  uint8_t ls[8];
  uint8_t lm[8];
  for (int j = 0; j < 8; ++j) {
    // The byte conversion first (a negative scale wraps), then the clamp.
    ls[j] = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_scale * scales[j])));
    lm[j] = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_min * mins[j])));
  }
  pack_k4_scales(ls, lm, packed_scales);
  d_out = f32_to_f16(max_scale / 63.0f);
  dmin_out = f32_to_f16(max_min / 63.0f);

  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    unpack_k4_scale_min(packed_scales, j, sc, m);
    const float d = f16_to_f32(d_out) * static_cast<float>(sc);
    if (d == 0.0f) continue;  // keep the search's levels
    const float dm = f16_to_f32(dmin_out) * static_cast<float>(m);
    for (int i = 0; i < 32; ++i) {
      L[32 * j + i] = static_cast<uint8_t>(std::clamp(nearest_int((x[32 * j + i] + dm) / d), 0, nmax));
    }
  }
}

}  // namespace

void quantize_q2_k(const float* in, size_t nblocks, BlockQ2_K* blocks) {
  constexpr float kScaleLevels = 15.0f;
  for (size_t b = 0; b < nblocks; ++b, in += kQK_K) {
    BlockQ2_K& blk = blocks[b];
    uint8_t L[kQK_K];
    float scales[16];
    float mins[16];
    float weights[16];
    float max_scale = 0.0f;
    float max_min = 0.0f;
    for (int j = 0; j < 16; ++j) {
      for (int l = 0; l < 16; ++l) weights[l] = std::fabs(in[16 * j + l]);
      scales[j] = search_scale_and_min(16, 3, in + 16 * j, weights, L + 16 * j, mins[j], -0.5f, 0.1f,
                                       15, true);
      max_scale = std::max(max_scale, scales[j]);
      max_min = std::max(max_min, mins[j]);
    }

    if (max_scale > 0.0f) {
      const float iscale = kScaleLevels / max_scale;
      for (int j = 0; j < 16; ++j) blk.scales[j] = static_cast<uint8_t>(nearest_int(iscale * scales[j]));
      blk.d = f32_to_f16(max_scale / kScaleLevels);
    } else {
      std::fill(blk.scales, blk.scales + 16, uint8_t{0});
      blk.d = f32_to_f16(0.0f);
    }
    if (max_min > 0.0f) {
      const float iscale = kScaleLevels / max_min;
      for (int j = 0; j < 16; ++j) {
        blk.scales[j] = static_cast<uint8_t>(blk.scales[j] | (nearest_int(iscale * mins[j]) << 4));
      }
      blk.dmin = f32_to_f16(max_min / kScaleLevels);
    } else {
      blk.dmin = f32_to_f16(0.0f);
    }

    for (int j = 0; j < 16; ++j) {
      const float d = f16_to_f32(blk.d) * static_cast<float>(blk.scales[j] & 0xF);
      if (d == 0.0f) continue;
      const float dm = f16_to_f32(blk.dmin) * static_cast<float>(blk.scales[j] >> 4);
      for (int i = 0; i < 16; ++i) {
        L[16 * j + i] = static_cast<uint8_t>(std::clamp(nearest_int((in[16 * j + i] + dm) / d), 0, 3));
      }
    }
    pack_2bit(L, blk.qs);
  }
}

void quantize_q3_k(const float* in, size_t nblocks, BlockQ3_K* blocks) {
  for (size_t b = 0; b < nblocks; ++b, in += kQK_K) {
    BlockQ3_K& blk = blocks[b];
    int8_t L[kQK_K];
    float scales[16];
    float max_scale = 0.0f;
    float amax = 0.0f;
    for (int j = 0; j < 16; ++j) {
      scales[j] = refine_symmetric_scale(16, 4, in + 16 * j, L + 16 * j);
      if (std::fabs(scales[j]) > amax) {
        amax = std::fabs(scales[j]);
        max_scale = scales[j];
      }
    }

    // Scales as 6-bit signed values: low nibbles in bytes 0..7, top 2 bits
    // in bytes 8..11 (see unpack_q3k_scale).
    std::memset(blk.scales, 0, sizeof(blk.scales));
    if (max_scale != 0.0f) {
      const float iscale = -32.0f / max_scale;
      for (int j = 0; j < 16; ++j) {
        const int8_t rounded = static_cast<int8_t>(nearest_int(iscale * scales[j]));
        const int l = std::clamp<int>(rounded, -32, 31) + 32;
        if (j < 8) {
          blk.scales[j] = static_cast<uint8_t>(l & 0xF);
        } else {
          blk.scales[j - 8] = static_cast<uint8_t>(blk.scales[j - 8] | ((l & 0xF) << 4));
        }
        blk.scales[8 + j % 4] = static_cast<uint8_t>(blk.scales[8 + j % 4] | ((l >> 4) << (2 * (j / 4))));
      }
      blk.d = f32_to_f16(1 / iscale);
    } else {
      blk.d = f32_to_f16(0.0f);
    }

    for (int j = 0; j < 16; ++j) {
      const float d = f16_to_f32(blk.d) * static_cast<float>(unpack_q3k_scale(blk.scales, j));
      if (d == 0.0f) continue;
      for (int i = 0; i < 16; ++i) {
        L[16 * j + i] = static_cast<int8_t>(std::clamp(nearest_int(in[16 * j + i] / d), -4, 3) + 4);
      }
    }

    // Bit 2 of level i goes to hmask byte i % 32, bit i / 32.
    std::memset(blk.hmask, 0, sizeof(blk.hmask));
    uint8_t low_bits[kQK_K];
    for (int i = 0; i < kQK_K; ++i) {
      if (L[i] > 3) blk.hmask[i % 32] = static_cast<uint8_t>(blk.hmask[i % 32] | (1 << (i / 32)));
      low_bits[i] = static_cast<uint8_t>(L[i] & 3);
    }
    pack_2bit(low_bits, blk.qs);
  }
}

void quantize_q4_k(const float* in, size_t nblocks, BlockQ4_K* blocks) {
  for (size_t b = 0; b < nblocks; ++b, in += kQK_K) {
    BlockQ4_K& blk = blocks[b];
    uint8_t L[kQK_K];
    quantize_k4_family(in, 15, -1.0f, 0.1f, 20, blk.d, blk.dmin, blk.scales, L);
    for (int pair = 0; pair < 4; ++pair) {
      const uint8_t* Lp = L + 64 * pair;
      for (int l = 0; l < 32; ++l) blk.qs[32 * pair + l] = static_cast<uint8_t>(Lp[l] | (Lp[l + 32] << 4));
    }
  }
}

void quantize_q5_k(const float* in, size_t nblocks, BlockQ5_K* blocks) {
  for (size_t b = 0; b < nblocks; ++b, in += kQK_K) {
    BlockQ5_K& blk = blocks[b];
    uint8_t L[kQK_K];
    quantize_k4_family(in, 31, -0.5f, 0.1f, 15, blk.d, blk.dmin, blk.scales, L);
    // Bit 4 of value 32 * sub + l goes to qh byte l, bit sub.
    std::memset(blk.qh, 0, sizeof(blk.qh));
    for (int pair = 0; pair < 4; ++pair) {
      const uint8_t* Lp = L + 64 * pair;
      for (int l = 0; l < 32; ++l) {
        const int lo = Lp[l];
        const int hi = Lp[l + 32];
        const int high_bits = ((lo >> 4) << (2 * pair)) | ((hi >> 4) << (2 * pair + 1));
        blk.qh[l] = static_cast<uint8_t>(blk.qh[l] | high_bits);
        blk.qs[32 * pair + l] = static_cast<uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
      }
    }
  }
}

void quantize_q6_k(const float* in, size_t nblocks, BlockQ6_K* blocks) {
  for (size_t b = 0; b < nblocks; ++b, in += kQK_K) {
    BlockQ6_K& blk = blocks[b];
    int8_t L[kQK_K];
    float scales[16];
    float max_scale = 0.0f;
    float max_abs_scale = 0.0f;
    for (int j = 0; j < 16; ++j) {
      scales[j] = search_symmetric_scale(16, 32, in + 16 * j, L + 16 * j);
      if (std::fabs(scales[j]) > max_abs_scale) {
        max_abs_scale = std::fabs(scales[j]);
        max_scale = scales[j];
      }
    }
    if (max_abs_scale < 1e-15f) {
      std::memset(&blk, 0, sizeof(blk));
      continue;
    }

    const float iscale = -128.0f / max_scale;
    blk.d = f32_to_f16(1 / iscale);
    for (int j = 0; j < 16; ++j) {
      blk.scales[j] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[j])));
    }
    for (int j = 0; j < 16; ++j) {
      const float d = f16_to_f32(blk.d) * static_cast<float>(blk.scales[j]);
      if (d == 0.0f) continue;
      for (int i = 0; i < 16; ++i) {
        L[16 * j + i] = static_cast<int8_t>(std::clamp(nearest_int(in[16 * j + i] / d), -32, 31) + 32);
      }
    }

    // See dequantize_q6_k for the layout.
    for (int half = 0; half < 2; ++half) {
      const int8_t* Lh = L + 128 * half;
      uint8_t* ql = blk.ql + 64 * half;
      uint8_t* qh = blk.qh + 32 * half;
      for (int l = 0; l < 32; ++l) {
        ql[l] = static_cast<uint8_t>((Lh[l] & 0xF) | ((Lh[l + 64] & 0xF) << 4));
        ql[l + 32] = static_cast<uint8_t>((Lh[l + 32] & 0xF) | ((Lh[l + 96] & 0xF) << 4));
        qh[l] = static_cast<uint8_t>((Lh[l] >> 4) | ((Lh[l + 32] >> 4) << 2) | ((Lh[l + 64] >> 4) << 4) |
                                     ((Lh[l + 96] >> 4) << 6));
      }
    }
  }
}

}  // namespace lamina::quant::ref
