// Round-to-nearest quantizers (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1, Q8_K):
// one pass per block, byte-exact with ggml's reference quantizers.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "lamina/quant/half.h"
#include "reference_rows.h"

namespace lamina::quant::ref {
namespace {

// The value of largest magnitude (the first one on ties), sign kept.
float signed_absmax(const float* x, int n) {
  float amax = 0.0f;
  float max = 0.0f;
  for (int j = 0; j < n; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

float absmax(const float* x, int n) {
  float amax = 0.0f;
  for (int j = 0; j < n; ++j) amax = std::max(amax, std::fabs(x[j]));
  return amax;
}

struct Range {
  float min = FLT_MAX;
  float max = -FLT_MAX;
};

Range value_range(const float* x, int n) {
  Range r;
  for (int j = 0; j < n; ++j) {
    if (x[j] < r.min) r.min = x[j];
    if (x[j] > r.max) r.max = x[j];
  }
  return r;
}

// Sets bit j of the Q5 high-bit word for 5-bit value q of element j.
void store_q5_high_bit(uint32_t& qh, int j, unsigned q) { qh |= ((q >> 4) & 1u) << j; }

}  // namespace

// Symmetric 4-bit: the extreme value maps to -8, so the range is used fully
// on its side. Conversion truncates after adding 8.5, as ggml does.
void quantize_q4_0(const float* in, size_t nblocks, BlockQ4_0* blocks) {
  for (size_t b = 0; b < nblocks; ++b, in += kQK) {
    const float d = signed_absmax(in, kQK) / -8;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    blocks[b].d = f32_to_f16(d);
    for (int j = 0; j < kQK / 2; ++j) {
      const int lo = std::min(15, static_cast<int>(static_cast<int8_t>(in[j] * id + 8.5f)));
      const int hi = std::min(15, static_cast<int>(static_cast<int8_t>(in[j + kQK / 2] * id + 8.5f)));
      blocks[b].qs[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
}

void quantize_q4_1(const float* in, size_t nblocks, BlockQ4_1* blocks) {
  for (size_t b = 0; b < nblocks; ++b, in += kQK) {
    const Range r = value_range(in, kQK);
    const float d = (r.max - r.min) / 15;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    blocks[b].d = f32_to_f16(d);
    blocks[b].m = f32_to_f16(r.min);
    for (int j = 0; j < kQK / 2; ++j) {
      const int lo = std::min(15, static_cast<int>(static_cast<int8_t>((in[j] - r.min) * id + 0.5f)));
      const int hi =
          std::min(15, static_cast<int>(static_cast<int8_t>((in[j + kQK / 2] - r.min) * id + 0.5f)));
      blocks[b].qs[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
}

void quantize_q5_0(const float* in, size_t nblocks, BlockQ5_0* blocks) {
  for (size_t b = 0; b < nblocks; ++b, in += kQK) {
    const float d = signed_absmax(in, kQK) / -16;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    blocks[b].d = f32_to_f16(d);
    uint32_t qh = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      const unsigned lo = static_cast<unsigned>(
          std::min(31, static_cast<int>(static_cast<int8_t>(in[j] * id + 16.5f))));
      const unsigned hi = static_cast<unsigned>(
          std::min(31, static_cast<int>(static_cast<int8_t>(in[j + kQK / 2] * id + 16.5f))));
      blocks[b].qs[j] = static_cast<uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
      store_q5_high_bit(qh, j, lo);
      store_q5_high_bit(qh, j + kQK / 2, hi);
    }
    std::memcpy(blocks[b].qh, &qh, sizeof(qh));
  }
}

void quantize_q5_1(const float* in, size_t nblocks, BlockQ5_1* blocks) {
  for (size_t b = 0; b < nblocks; ++b, in += kQK) {
    const Range r = value_range(in, kQK);
    const float d = (r.max - r.min) / 31;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    blocks[b].d = f32_to_f16(d);
    blocks[b].m = f32_to_f16(r.min);
    uint32_t qh = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      // (x - min) * id lies in [0, 31] up to rounding, so no clamp is needed.
      const unsigned lo = static_cast<uint8_t>((in[j] - r.min) * id + 0.5f);
      const unsigned hi = static_cast<uint8_t>((in[j + kQK / 2] - r.min) * id + 0.5f);
      blocks[b].qs[j] = static_cast<uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
      store_q5_high_bit(qh, j, lo);
      store_q5_high_bit(qh, j + kQK / 2, hi);
    }
    std::memcpy(blocks[b].qh, &qh, sizeof(qh));
  }
}

// Q8_0/Q8_1 round half away from zero (roundf), unlike the K-quants.
void quantize_q8_0(const float* in, size_t nblocks, BlockQ8_0* blocks) {
  for (size_t b = 0; b < nblocks; ++b, in += kQK) {
    const float d = absmax(in, kQK) / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    blocks[b].d = f32_to_f16(d);
    for (int j = 0; j < kQK; ++j) blocks[b].qs[j] = static_cast<int8_t>(std::round(in[j] * id));
  }
}

// s keeps d * sum(q) with the unrounded f32 d, as ggml's Q4_1/Q5_1 dots expect.
void quantize_q8_1(const float* in, size_t nblocks, BlockQ8_1* blocks) {
  for (size_t b = 0; b < nblocks; ++b, in += kQK) {
    const float d = absmax(in, kQK) / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    blocks[b].d = f32_to_f16(d);
    int sum = 0;
    for (int j = 0; j < kQK; ++j) {
      blocks[b].qs[j] = static_cast<int8_t>(std::round(in[j] * id));
      sum += blocks[b].qs[j];
    }
    blocks[b].s = f32_to_f16(static_cast<float>(sum) * d);
  }
}

// f32 scale chosen so that the extreme value maps to -127 exactly.
void quantize_q8_k(const float* in, size_t nblocks, BlockQ8_K* blocks) {
  for (size_t b = 0; b < nblocks; ++b, in += kQK_K) {
    BlockQ8_K& blk = blocks[b];
    const float max = signed_absmax(in, kQK_K);
    if (max == 0.0f) {
      std::memset(&blk, 0, sizeof(blk));
      continue;
    }
    const float iscale = -127.0f / max;
    for (int j = 0; j < kQK_K; ++j) {
      blk.qs[j] = static_cast<int8_t>(std::min(127, nearest_int(iscale * in[j])));
    }
    for (int g = 0; g < kQK_K / 16; ++g) {
      int sum = 0;
      for (int j = 0; j < 16; ++j) sum += blk.qs[g * 16 + j];
      blk.bsums[g] = static_cast<int16_t>(sum);
    }
    blk.d = 1 / iscale;
  }
}

}  // namespace lamina::quant::ref
