// Reference quantizers of IQ4_NL and IQ4_XS: 4-bit indices into a fixed
// non-linear codebook. Per 32-value block the scale is searched over 15 grid
// widths with x^2 weights; IQ4_XS then stores those scales as 6-bit
// multiples of one f16 super-block scale and re-picks the indices.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "lamina/quant/half.h"
#include "reference_rows.h"

namespace lamina::quant::ref {
namespace {

constexpr float kGroupMaxEps = 1e-15f;
constexpr int kSearchSteps = 7;  // grid widths codebook[0] +- 7

float codebook(int index) { return static_cast<float>(kIQ4NLValues[static_cast<size_t>(index)]); }

// Best least-squares scale of one 32-value block (0 when all zero), and the
// indices for its first grid; w = x^2.
float search_block_scale(const float* x, uint8_t* L) {
  float amax = 0.0f;
  float max = 0.0f;
  for (int j = 0; j < kQK; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  if (amax < kGroupMaxEps) return 0.0f;

  // Sums of w*q*x and w*q*q for the indices picked at inverse scale id.
  auto fit = [&](float id, float& sumqx, float& sumq2, uint8_t* levels) {
    sumqx = 0.0f;
    sumq2 = 0.0f;
    for (int j = 0; j < kQK; ++j) {
      const int l = nearest_iq4nl_index(id * x[j]);
      if (levels != nullptr) levels[j] = static_cast<uint8_t>(l);
      const float q = codebook(l);
      const float w = x[j] * x[j];
      sumqx += w * q * x[j];
      sumq2 += w * q * q;
    }
  };

  // First grid: the extreme value maps onto the codebook's extreme entry.
  float sumqx, sumq2;
  fit(1 / (-max / codebook(0)), sumqx, sumq2, L);
  float d = sumqx / sumq2;
  float best = d * sumqx;
  for (int step = -kSearchSteps; step <= kSearchSteps; ++step) {
    const float id = static_cast<float>(step + kIQ4NLValues[0]) / max;
    fit(id, sumqx, sumq2, nullptr);
    if (sumq2 > 0.0f && sumqx * sumqx > best * sumq2) {
      d = sumqx / sumq2;
      best = d * sumqx;
    }
  }
  return d;
}

void pick_indices(const float* x, int n, float inverse_scale, uint8_t* L) {
  for (int j = 0; j < n; ++j) L[j] = static_cast<uint8_t>(nearest_iq4nl_index(inverse_scale * x[j]));
}

// Block of 32 indices -> 16 bytes: value j in the low nibble of byte j, value
// j + 16 in its high nibble.
void pack_nibbles(const uint8_t* L, uint8_t* qs) {
  for (int j = 0; j < kQK / 2; ++j) qs[j] = static_cast<uint8_t>(L[j] | (L[j + kQK / 2] << 4));
}

}  // namespace

int nearest_iq4nl_index(float x) {
  if (x <= codebook(0)) return 0;
  if (x >= codebook(15)) return 15;
  int lo = 0;
  int hi = 15;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (x < codebook(mid)) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  return x - codebook(hi - 1) < codebook(hi) - x ? hi - 1 : hi;
}

void quantize_iq4_nl(const float* in, size_t nblocks, BlockIQ4_NL* blocks) {
  for (size_t b = 0; b < nblocks; ++b, in += kQK) {
    uint8_t L[kQK];
    const float d = search_block_scale(in, L);
    blocks[b].d = f32_to_f16(d);
    pick_indices(in, kQK, d != 0.0f ? 1 / d : 0.0f, L);
    pack_nibbles(L, blocks[b].qs);
  }
}

void quantize_iq4_xs(const float* in, size_t nblocks, BlockIQ4_XS* blocks) {
  constexpr int kSubBlocks = kQK_K / kQK;
  for (size_t b = 0; b < nblocks; ++b, in += kQK_K) {
    BlockIQ4_XS& blk = blocks[b];
    uint8_t L[kQK_K];
    float scales[kSubBlocks];
    float max_scale = 0.0f;
    float amax_scale = 0.0f;
    for (int ib = 0; ib < kSubBlocks; ++ib) {
      scales[ib] = search_block_scale(in + kQK * ib, L + kQK * ib);
      if (std::fabs(scales[ib]) > amax_scale) {
        amax_scale = std::fabs(scales[ib]);
        max_scale = scales[ib];
      }
    }

    // The block scales become (l - 32) * d with l 6-bit; the indices are then
    // re-picked for the scale actually stored (from the unrounded d, as ggml).
    const float d = -max_scale / 32;
    blk.d = f32_to_f16(d);
    const float id = d != 0.0f ? 1 / d : 0.0f;
    blk.scales_h = 0;
    std::memset(blk.scales_l, 0, sizeof(blk.scales_l));
    for (int ib = 0; ib < kSubBlocks; ++ib) {
      const int l = std::clamp(nearest_int(id * scales[ib]), -32, 31);
      const float dl = d * static_cast<float>(l);
      pick_indices(in + kQK * ib, kQK, dl != 0.0f ? 1 / dl : 0.0f, L + kQK * ib);
      const int stored = l + 32;
      blk.scales_l[ib / 2] = static_cast<uint8_t>(blk.scales_l[ib / 2] | ((stored & 0xF) << (4 * (ib % 2))));
      blk.scales_h = static_cast<uint16_t>(blk.scales_h | ((stored >> 4) << (2 * ib)));
    }
    for (int ib = 0; ib < kSubBlocks; ++ib) pack_nibbles(L + kQK * ib, blk.qs + 16 * ib);
  }
}

}  // namespace lamina::quant::ref
