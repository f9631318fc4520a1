// GPU activation quantization, matrix products and row gathers of every
// weight format against libquant's scalar reference.
//
// Tolerance of the products: the GPU computes each block's (or sub-block's)
// integer dot exactly and rounds only in f32 scaling and summation
// (weight_formats.cuh): one chain per output through its n_in / 32 blocks
// (one fused multiply-add each, after one rounding of the scale product) or
// its n_in / 256 super-blocks (about 4 roundings each); the float formats
// take at most n_in / 256 + 13 fused multiply-adds per lane chain and a
// 32-term sum. Each rounding errs by at most 2^-24 of a partial sum bounded
// by 2 sum_i |w_i * a_i| (the factor 2 for the formats with minima). For the
// longest chains here (136 blocks) that bounds the error by ~3e-5 of
// sum_i |w_i * a_i| in the worst case, but the roundings are of random sign,
// so the error grows like the square root of the chain: what the tests
// report stays an order of magnitude under 1e-5, while a wrong bit of any
// decoder moves the result by orders of magnitude more.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "lamina/cudaexec/kernel_check.h"
#include "random_weights.h"
#include "lamina/quant/blocks.h"
#include "lamina/quant/format.h"
#include "lamina/quant/half.h"
#include "lamina/quant/reference.h"

namespace lamina::cudaexec {
namespace {

using quant::QuantFormat;
using test::format_name;
using test::random_rows;

constexpr double kRelTolerance = 1e-5;

constexpr QuantFormat kWeightFormats[] = {
    QuantFormat::F32,  QuantFormat::F16,  QuantFormat::BF16, QuantFormat::Q4_0,   QuantFormat::Q4_1,
    QuantFormat::Q5_0, QuantFormat::Q5_1, QuantFormat::Q8_0, QuantFormat::Q2_K,   QuantFormat::Q3_K,
    QuantFormat::Q4_K, QuantFormat::Q5_K, QuantFormat::Q6_K, QuantFormat::IQ4_NL, QuantFormat::IQ4_XS,
    QuantFormat::MXFP4,
};

bool is_float_format(QuantFormat f) {
  return f == QuantFormat::F32 || f == QuantFormat::F16 || f == QuantFormat::BF16;
}

QuantFormat act_format_of(QuantFormat weight) {
  return is_float_format(weight) ? QuantFormat::F32 : quant::format_traits(weight).activation;
}



// A weight matrix: n_rows rows of `format`, each quantize_row_ref of random values.
struct Weights {
  QuantFormat format;
  uint32_t rows;
  uint32_t cols;
  size_t row_bytes;
  std::vector<uint8_t> bytes;
  const uint8_t* row(uint32_t r) const { return bytes.data() + r * row_bytes; }
};

Weights quantized_weights(QuantFormat format, uint32_t rows, uint32_t cols, std::mt19937& rng) {
  return {format, rows, cols, quant::row_bytes(format, cols), test::quantized_weight_bytes(format, rows, cols, rng)};
}


// Every payload bit random (all codes, scales, high bits; more than any
// quantizer produces), the f16 scales finite and moderate.
Weights random_bit_weights(QuantFormat format, uint32_t rows, uint32_t cols, std::mt19937& rng) {
  if (is_float_format(format)) return quantized_weights(format, rows, cols, rng);
  return {format, rows, cols, quant::row_bytes(format, cols), test::random_bit_weight_bytes(format, rows, cols, rng)};
}

std::vector<float> dequantized(QuantFormat format, const void* row, uint32_t n) {
  std::vector<float> out(n);
  quant::dequantize_row_ref(format, row, out.data(), n);
  return out;
}

// Compares check_matmul against the reference dot of every output; returns
// the largest |error| / sum |w_i a_i| seen.
double expect_matmul_matches(const Weights& w, const std::vector<float>& x, uint32_t n_rows, const char* what) {
  const uint32_t n = w.cols;
  const QuantFormat af = act_format_of(w.format);
  const std::vector<float> y = check_matmul(w.format, w.bytes.data(), w.rows, n, x.data(), n_rows);

  std::vector<std::vector<uint8_t>> act(n_rows);
  std::vector<std::vector<float>> act_values(n_rows);
  for (uint32_t r = 0; r < n_rows; ++r) {
    act[r].resize(quant::row_bytes(af, n));
    quant::quantize_row_ref(af, x.data() + static_cast<size_t>(r) * n, act[r].data(), n);
    act_values[r] = dequantized(af, act[r].data(), n);
  }
  double worst = 0.0;
  int failures = 0;
  for (uint32_t o = 0; o < w.rows; ++o) {
    const std::vector<float> wv = dequantized(w.format, w.row(o), n);
    for (uint32_t r = 0; r < n_rows; ++r) {
      const double ref = is_float_format(w.format)
                             ? quant::dot_ref(w.format, w.row(o), x.data() + static_cast<size_t>(r) * n, n)
                             : quant::dot_quantized_ref(w.format, w.row(o), act[r].data(), n);
      double magnitude = 0.0;
      for (uint32_t i = 0; i < n; ++i) magnitude += std::fabs(static_cast<double>(wv[i]) * act_values[r][i]);
      const double got = y[static_cast<size_t>(r) * w.rows + o];
      const double err = std::fabs(got - ref);
      if (magnitude > 0.0) worst = std::max(worst, err / magnitude);
      if (!(err <= kRelTolerance * magnitude) && ++failures <= 5) {
        ADD_FAILURE() << format_name(w.format) << " " << what << " n_in=" << n << " n_out=" << w.rows
                      << " n_rows=" << n_rows << " output (" << r << ", " << o << "): gpu " << got << " ref " << ref
                      << " |err| " << err << " > " << kRelTolerance << " * " << magnitude;
      }
    }
  }
  EXPECT_EQ(failures, 0) << format_name(w.format) << " " << what << " n_in=" << n << " n_out=" << w.rows
                         << " n_rows=" << n_rows;
  return worst;
}

class GpuKernelTest : public ::testing::TestWithParam<QuantFormat> {
 protected:
  QuantFormat format() const { return GetParam(); }
  std::mt19937 rng_{1234u + static_cast<uint32_t>(GetParam())};
};

// Rows with rounding ties (half-integers at scale 1), a tie of extremes of
// opposite sign (which Q8_K must resolve to the first), an all-zero row and
// random rows: the GPU's blocks equal quantize_row_ref's byte for byte.
TEST_P(GpuKernelTest, QuantizedActivationsMatchReferenceBytes) {
  const QuantFormat af = act_format_of(format());
  for (uint32_t n_in : {256u, 512u, 4352u}) {
    constexpr uint32_t kRows = 5;
    std::vector<float> x = random_rows(kRows, n_in, rng_);
    float* ties = x.data() + n_in;
    for (uint32_t i = 0; i < n_in; ++i) {
      const float mag = static_cast<float>((i * 37u) % 253u) * 0.5f;  // 0 .. 126, half-integers included
      ties[i] = (i % 3 == 0) ? -mag : mag;
      if (i % 32 == 5) ties[i] = 127.0f;
      if (i % 32 == 17) ties[i] = -127.0f;
    }
    std::fill(x.begin() + 2 * n_in, x.begin() + 3 * n_in, 0.0f);

    const std::vector<uint8_t> got = check_quantize_activations(format(), x.data(), n_in, kRows);
    const size_t rb = quant::row_bytes(af, n_in);
    ASSERT_EQ(got.size(), rb * kRows);
    std::vector<uint8_t> want(rb);
    for (uint32_t r = 0; r < kRows; ++r) {
      quant::quantize_row_ref(af, x.data() + static_cast<size_t>(r) * n_in, want.data(), n_in);
      size_t first_diff = rb;
      for (size_t i = 0; i < rb && first_diff == rb; ++i) {
        if (got[r * rb + i] != want[i]) first_diff = i;
      }
      EXPECT_EQ(first_diff, rb) << format_name(af) << " n_in=" << n_in << " row " << r << ": first differing byte "
                                << first_diff;
    }
  }
}

// Every shape of the grid: n_in with even and odd block counts, output counts
// from 1 to a few warps' worth, activation rows within and across row tiles.
TEST_P(GpuKernelTest, MatmulMatchesReferenceDot) {
  std::vector<uint32_t> n_ins = {256, 512, 4352};
  if (is_float_format(format())) n_ins.push_back(100);  // not a multiple of 8: the one-value path
  const uint32_t n_outs[] = {1, 7, 33, 300};
  const uint32_t n_rows_list[] = {1, 3, 8, 13};
  double worst = 0.0;
  for (size_t i = 0; i < n_ins.size(); ++i) {
    for (size_t j = 0; j < 4; ++j) {
      const uint32_t n_rows = n_rows_list[(i + j) % 4];
      const Weights w = quantized_weights(format(), n_outs[j], n_ins[i], rng_);
      const std::vector<float> x = random_rows(n_rows, n_ins[i], rng_);
      worst = std::max(worst, expect_matmul_matches(w, x, n_rows, "quantized"));
    }
  }
  std::printf("[   stat   ] %-6s matmul: max |err| / sum|w*a| = %.3g\n", format_name(format()).c_str(), worst);
}

// Weights with every bit pattern a block can hold, so each code, scale and
// high bit of the decoders is exercised, not only those a quantizer picks.
TEST_P(GpuKernelTest, MatmulMatchesReferenceOnRandomBits) {
  for (uint32_t n_in : {256u, 4352u}) {
    const Weights w = random_bit_weights(format(), 33, n_in, rng_);
    const std::vector<float> x = random_rows(3, n_in, rng_);
    expect_matmul_matches(w, x, 3, "random-bits");
  }
}

// Row r of a 13-row product is bit-identical to row r computed alone.
TEST_P(GpuKernelTest, MatmulIsBatchInvariant) {
  constexpr uint32_t kRows = 13;
  const uint32_t n_in = 4352;
  const uint32_t n_out = 33;
  const Weights w = quantized_weights(format(), n_out, n_in, rng_);
  const std::vector<float> x = random_rows(kRows, n_in, rng_);
  const std::vector<float> all = check_matmul(format(), w.bytes.data(), n_out, n_in, x.data(), kRows);
  const std::vector<float> first3 = check_matmul(format(), w.bytes.data(), n_out, n_in, x.data(), 3);
  for (uint32_t r = 0; r < kRows; ++r) {
    const std::vector<float> one =
        check_matmul(format(), w.bytes.data(), n_out, n_in, x.data() + static_cast<size_t>(r) * n_in, 1);
    EXPECT_EQ(std::memcmp(one.data(), all.data() + static_cast<size_t>(r) * n_out, n_out * sizeof(float)), 0)
        << "row " << r << " of 13 differs from the same row alone";
    if (r < 3) {
      EXPECT_EQ(std::memcmp(one.data(), first3.data() + static_cast<size_t>(r) * n_out, n_out * sizeof(float)), 0)
          << "row " << r << " of 3 differs from the same row alone";
    }
  }
}

// y = W x + bias + residual, added in that order in f32, residual in place.
TEST_P(GpuKernelTest, BiasAndResidualEpilogue) {
  const uint32_t n_in = 512;
  const uint32_t n_out = 33;
  const uint32_t n_rows = 3;
  const Weights w = quantized_weights(format(), n_out, n_in, rng_);
  const std::vector<float> x = random_rows(n_rows, n_in, rng_);
  const std::vector<float> bias = random_rows(1, n_out, rng_);
  const std::vector<float> residual = random_rows(n_rows, n_out, rng_);
  const std::vector<float> plain = check_matmul(format(), w.bytes.data(), n_out, n_in, x.data(), n_rows);
  const std::vector<float> with_bias =
      check_matmul(format(), w.bytes.data(), n_out, n_in, x.data(), n_rows, bias.data());
  const std::vector<float> with_both =
      check_matmul(format(), w.bytes.data(), n_out, n_in, x.data(), n_rows, bias.data(), residual.data());
  const std::vector<float> residual_only =
      check_matmul(format(), w.bytes.data(), n_out, n_in, x.data(), n_rows, nullptr, residual.data());
  for (uint32_t r = 0; r < n_rows; ++r) {
    for (uint32_t o = 0; o < n_out; ++o) {
      const size_t at = static_cast<size_t>(r) * n_out + o;
      const float b = plain[at] + bias[o];
      EXPECT_EQ(with_bias[at], b) << "(" << r << ", " << o << ")";
      EXPECT_EQ(with_both[at], b + residual[at]) << "(" << r << ", " << o << ")";
      EXPECT_EQ(residual_only[at], plain[at] + residual[at]) << "(" << r << ", " << o << ")";
    }
  }
}

// Gathered rows equal dequantize_row_ref bit for bit, repeated ids included.
TEST_P(GpuKernelTest, GatherRowsMatchesDequantizeBits) {
  std::vector<uint32_t> widths = {256, 4352};
  if (is_float_format(format())) widths.push_back(100);
  for (uint32_t n_cols : widths) {
    const uint32_t n_rows_w = 6;
    const Weights w = random_bit_weights(format(), n_rows_w, n_cols, rng_);
    const std::vector<int32_t> ids = {3, 0, 5, 5, 1};
    const std::vector<float> got = check_gather_rows(format(), w.bytes.data(), n_rows_w, n_cols, ids);
    ASSERT_EQ(got.size(), ids.size() * n_cols);
    for (size_t k = 0; k < ids.size(); ++k) {
      const std::vector<float> want = dequantized(format(), w.row(static_cast<uint32_t>(ids[k])), n_cols);
      size_t first_diff = n_cols;
      for (uint32_t i = 0; i < n_cols && first_diff == n_cols; ++i) {
        uint32_t a, b;
        std::memcpy(&a, &got[k * n_cols + i], 4);
        std::memcpy(&b, &want[i], 4);
        if (a != b) first_diff = i;
      }
      EXPECT_EQ(first_diff, n_cols) << "n_cols=" << n_cols << " id " << ids[k] << ": value " << first_diff
                                    << " differs (gpu " << got[k * n_cols + std::min(first_diff, size_t{n_cols - 1})]
                                    << ")";
    }
  }
}

// ---- the kernels' float order, emulated on the host ----
//
// Float weights: lane l adds units l, l + 32, ... of a row in order (fused
// multiply-adds), and the lane sums are added in lane order, from -0.
// Quantized weights (weight_formats.cuh), from -0: 32-value blocks in
// order, one fused multiply-add each (after the minimum's, for the formats
// with one); super-blocks in order, each total + (isum * d - msum * dmin) *
// d_a from its exact integer sums, the subtraction and the addition fused. The emulation
// repeats those f32 operations one by one (ISO C++: no contraction), so the
// GPU must match it bit for bit, one row or many.

template <class AddUnit>
float lane_order(uint32_t n_units, AddUnit add_unit) {
  float lanes[32];
  for (uint32_t l = 0; l < 32; ++l) {
    float acc = 0.0f;
    for (uint32_t u = l; u < n_units; u += 32) acc = add_unit(acc, u);
    lanes[l] = acc;
  }
  float total = -0.0f;
  for (uint32_t l = 0; l < 32; ++l) total += lanes[l];
  return total;
}

// An activation row as the kernels read it: int8 values and per-block f32 scales.
struct ActRow {
  std::vector<int> q;
  std::vector<float> d;
  int sum(uint32_t first, uint32_t count) const {
    int s = 0;
    for (uint32_t i = 0; i < count; ++i) s += q[first + i];
    return s;
  }
  int dot(const int* w, uint32_t first, uint32_t count) const {
    int s = 0;
    for (uint32_t i = 0; i < count; ++i) s += w[i] * q[first + i];
    return s;
  }
};

ActRow act_row(QuantFormat af, const float* x, uint32_t n) {
  std::vector<uint8_t> bytes(quant::row_bytes(af, n));
  quant::quantize_row_ref(af, x, bytes.data(), n);
  ActRow a;
  if (af == QuantFormat::Q8_K) {
    const auto* blocks = reinterpret_cast<const quant::BlockQ8_K*>(bytes.data());
    for (uint32_t b = 0; b < n / quant::kQK_K; ++b) {
      a.d.push_back(blocks[b].d);
      a.q.insert(a.q.end(), blocks[b].qs, blocks[b].qs + quant::kQK_K);
    }
  } else {
    // Q8_0 and Q8_1 start alike: the f16 scale, then (Q8_1) the f16 sum, then 32 values.
    const size_t bb = quant::format_traits(af).block_bytes;
    for (uint32_t b = 0; b < n / quant::kQK; ++b) {
      const uint8_t* blk = bytes.data() + b * bb;
      uint16_t d16;
      std::memcpy(&d16, blk, 2);
      a.d.push_back(quant::f16_to_f32(d16));
      const auto* qs = reinterpret_cast<const int8_t*>(blk + bb - 32);
      a.q.insert(a.q.end(), qs, qs + 32);
    }
  }
  return a;
}

// Scale and minimum j of a Q4_K/Q5_K block's 12 packed bytes.
void k_scale_min(const uint8_t* s, int j, int& sc, int& m) {
  if (j < 4) {
    sc = s[j] & 63;
    m = s[j + 4] & 63;
  } else {
    sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
    m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

// A 32-value block's final integer values, scale and minimum.
struct IntBlock {
  int q[32];
  float d = 0, m = 0;
};
IntBlock int_block(QuantFormat f, const uint8_t* w, uint32_t b) {
  using quant::f16_to_f32;
  IntBlock r;
  switch (f) {
    case QuantFormat::Q4_0: {
      const auto& blk = reinterpret_cast<const quant::BlockQ4_0*>(w)[b];
      for (int j = 0; j < 16; ++j) {
        r.q[j] = (blk.qs[j] & 0xF) - 8;
        r.q[j + 16] = (blk.qs[j] >> 4) - 8;
      }
      r.d = f16_to_f32(blk.d);
      break;
    }
    case QuantFormat::Q4_1: {
      const auto& blk = reinterpret_cast<const quant::BlockQ4_1*>(w)[b];
      for (int j = 0; j < 16; ++j) {
        r.q[j] = blk.qs[j] & 0xF;
        r.q[j + 16] = blk.qs[j] >> 4;
      }
      r.d = f16_to_f32(blk.d);
      r.m = f16_to_f32(blk.m);
      break;
    }
    case QuantFormat::Q8_0: {
      const auto& blk = reinterpret_cast<const quant::BlockQ8_0*>(w)[b];
      for (int j = 0; j < 32; ++j) r.q[j] = blk.qs[j];
      r.d = f16_to_f32(blk.d);
      break;
    }
    default: ADD_FAILURE() << "no integer block for " << format_name(f);
  }
  return r;
}

// A super-block's exact integer sums: isum = sum of scale * dot per
// sub-block, msum = sum of minimum * activation sum per sub-block.
struct SuperSums {
  int isum = 0, msum = 0;
  float d = 0, dmin = 0;
};
SuperSums super_sums(QuantFormat f, const uint8_t* w, uint32_t b, const ActRow& a) {
  using quant::f16_to_f32;
  SuperSums r;
  const uint32_t base = 256 * b;
  int q[256];
  switch (f) {
    case QuantFormat::Q2_K: {
      const auto& blk = reinterpret_cast<const quant::BlockQ2_K*>(w)[b];
      for (int n = 0; n < 2; ++n)
        for (int j = 0; j < 4; ++j)
          for (int l = 0; l < 32; ++l) q[128 * n + 32 * j + l] = (blk.qs[32 * n + l] >> (2 * j)) & 3;
      for (int s = 0; s < 16; ++s) {
        r.isum += (blk.scales[s] & 0xF) * a.dot(q + 16 * s, base + 16 * s, 16);
        r.msum += (blk.scales[s] >> 4) * a.sum(base + 16 * s, 16);
      }
      r.d = f16_to_f32(blk.d);
      r.dmin = f16_to_f32(blk.dmin);
      break;
    }
    case QuantFormat::Q4_K: {
      const auto& blk = reinterpret_cast<const quant::BlockQ4_K*>(w)[b];
      for (int p = 0; p < 4; ++p)
        for (int l = 0; l < 32; ++l) {
          q[64 * p + l] = blk.qs[32 * p + l] & 0xF;
          q[64 * p + 32 + l] = blk.qs[32 * p + l] >> 4;
        }
      for (int s = 0; s < 8; ++s) {
        int sc, m;
        k_scale_min(blk.scales, s, sc, m);
        r.isum += sc * a.dot(q + 32 * s, base + 32 * s, 32);
        r.msum += m * a.sum(base + 32 * s, 32);
      }
      r.d = f16_to_f32(blk.d);
      r.dmin = f16_to_f32(blk.dmin);
      break;
    }
    case QuantFormat::Q6_K: {
      const auto& blk = reinterpret_cast<const quant::BlockQ6_K*>(w)[b];
      for (int n = 0; n < 2; ++n)
        for (int l = 0; l < 32; ++l) {
          const int qh = blk.qh[32 * n + l];
          q[128 * n + l] = ((blk.ql[64 * n + l] & 0xF) | ((qh & 3) << 4)) - 32;
          q[128 * n + 32 + l] = ((blk.ql[64 * n + 32 + l] & 0xF) | (((qh >> 2) & 3) << 4)) - 32;
          q[128 * n + 64 + l] = ((blk.ql[64 * n + l] >> 4) | (((qh >> 4) & 3) << 4)) - 32;
          q[128 * n + 96 + l] = ((blk.ql[64 * n + 32 + l] >> 4) | (((qh >> 6) & 3) << 4)) - 32;
        }
      for (int s = 0; s < 16; ++s) r.isum += blk.scales[s] * a.dot(q + 16 * s, base + 16 * s, 16);
      r.d = f16_to_f32(blk.d);
      break;
    }
    default: ADD_FAILURE() << "no super-block sums for " << format_name(f);
  }
  return r;
}

bool has_minimum(QuantFormat f) {
  return f == QuantFormat::Q4_1 || f == QuantFormat::Q5_1 || f == QuantFormat::Q2_K || f == QuantFormat::Q4_K ||
         f == QuantFormat::Q5_K;
}

// One output in the kernels' order, for the formats this test pins.
float reference_order_dot(QuantFormat f, const uint8_t* w, const float* x, uint32_t n) {
  if (f == QuantFormat::F32) {
    const auto* wf = reinterpret_cast<const float*>(w);
    return lane_order(n / 8, [&](float acc, uint32_t u) {
      for (uint32_t i = 8 * u; i < 8 * u + 8; ++i) acc = std::fma(wf[i], x[i], acc);
      return acc;
    });
  }
  const ActRow a = act_row(act_format_of(f), x, n);
  const bool super = quant::format_traits(f).block_elems == 256;
  float total = -0.0f;
  for (uint32_t seg = 0; seg * 256 < n; ++seg) {
    if (super) {
      const SuperSums s = super_sums(f, w, seg, a);
      const float scaled = static_cast<float>(s.isum) * s.d;
      const float part = has_minimum(f) ? std::fma(-static_cast<float>(s.msum), s.dmin, scaled) : scaled;
      total = std::fma(part, a.d[seg], total);
      continue;
    }
    for (uint32_t b = 8 * seg; b < std::min(8 * seg + 8, n / 32); ++b) {
      const IntBlock blk = int_block(f, w, b);
      // The dot times d_w rounded once (the kernels reach it through the
      // exact biased float 1.5 * 2^23 + dot), then fused with d_a.
      constexpr float kMagic = 12582912.0f;
      const float biased = kMagic + static_cast<float>(a.dot(blk.q, 32 * b, 32));
      float u = std::fma(biased, blk.d, -kMagic * blk.d);
      if (has_minimum(f)) u = std::fma(static_cast<float>(a.sum(32 * b, 32)), blk.m, u);
      total = std::fma(u, a.d[b], total);
    }
  }
  return total;
}

// Outputs equal the host emulation of the kernels' order bit for bit: one
// row (the matvec) and 7, 13, 130 and 513 rows (tensor-core tiles), one segment,
// many, and a partial last segment (896 values), quantized and random-bit
// weights.
TEST(GpuMatmulOrder, MatchesReferenceOrderBitForBit) {
  std::mt19937 rng(99);
  for (QuantFormat f : {QuantFormat::F32, QuantFormat::Q4_0, QuantFormat::Q4_1, QuantFormat::Q8_0,
                        QuantFormat::Q2_K, QuantFormat::Q4_K, QuantFormat::Q6_K}) {
    for (uint32_t n_in : {256u, 896u, 4352u, 7936u}) {
      if (n_in % quant::format_traits(f).block_elems != 0) continue;
      for (uint32_t n_rows : {1u, 7u, 13u, 130u, 513u}) {
        if (n_rows == 513 && n_in > 896) continue;  // the host order emulation is slow
        const uint32_t n_out = 37;
        const Weights w = n_rows == 1 ? quantized_weights(f, n_out, n_in, rng) : random_bit_weights(f, n_out, n_in, rng);
        const std::vector<float> x = random_rows(n_rows, n_in, rng);
        const std::vector<float> y = check_matmul(f, w.bytes.data(), n_out, n_in, x.data(), n_rows);
        int mismatches = 0;
        for (uint32_t r = 0; r < n_rows; ++r) {
          for (uint32_t o = 0; o < n_out; ++o) {
            const float want = reference_order_dot(f, w.row(o), x.data() + static_cast<size_t>(r) * n_in, n_in);
            const float got = y[static_cast<size_t>(r) * n_out + o];
            if (std::memcmp(&want, &got, sizeof(float)) != 0 && ++mismatches <= 3) {
              ADD_FAILURE() << format_name(f) << " n_in=" << n_in << " n_rows=" << n_rows << " (" << r << ", " << o
                            << "): gpu " << got << " reference order " << want;
            }
          }
        }
        EXPECT_EQ(mismatches, 0) << format_name(f) << " n_in=" << n_in << " n_rows=" << n_rows;
      }
    }
  }
}

// A grouped product equals each matrix's own product bit for bit: one
// format (one launch, uneven n_out), mixed formats with a shared activation
// format, and formats needing separate activations.
TEST(GpuMatmulGroup, EqualsSeparateProducts) {
  std::mt19937 rng(5);
  const std::vector<std::vector<std::pair<QuantFormat, uint32_t>>> groups = {
      {{QuantFormat::Q4_K, 33}, {QuantFormat::Q4_K, 7}, {QuantFormat::Q4_K, 300}, {QuantFormat::Q4_K, 1}},
      {{QuantFormat::Q4_K, 65}, {QuantFormat::Q6_K, 9}, {QuantFormat::Q4_K, 40}},
      {{QuantFormat::Q8_0, 64}, {QuantFormat::Q4_0, 31}, {QuantFormat::F16, 17}},
      {{QuantFormat::Q5_0, 130}, {QuantFormat::Q5_0, 3}},
  };
  for (const auto& group : groups) {
    for (uint32_t n_rows : {1u, 10u}) {
      const uint32_t n_in = 512;
      std::vector<Weights> ws;
      std::vector<std::vector<float>> biases;
      std::vector<CheckMatrix> mats;
      for (const auto& [f, n_out] : group) {
        ws.push_back(quantized_weights(f, n_out, n_in, rng));
        biases.push_back(random_rows(1, n_out, rng));
      }
      for (size_t i = 0; i < group.size(); ++i) {
        mats.push_back(CheckMatrix{group[i].first, ws[i].bytes.data(), group[i].second,
                                   i % 2 == 0 ? biases[i].data() : nullptr});
      }
      const std::vector<float> x = random_rows(n_rows, n_in, rng);
      const std::vector<std::vector<float>> ys = check_matmul_group(mats, n_in, x.data(), n_rows);
      ASSERT_EQ(ys.size(), group.size());
      for (size_t i = 0; i < group.size(); ++i) {
        const std::vector<float> alone = check_matmul(mats[i].format, mats[i].w, mats[i].n_out, n_in, x.data(),
                                                      n_rows, mats[i].bias);
        ASSERT_EQ(ys[i].size(), alone.size());
        EXPECT_EQ(std::memcmp(ys[i].data(), alone.data(), alone.size() * sizeof(float)), 0)
            << "matrix " << i << " (" << format_name(mats[i].format) << ") of a group of " << group.size()
            << ", n_rows=" << n_rows;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllWeightFormats, GpuKernelTest, ::testing::ValuesIn(kWeightFormats),
                         [](const ::testing::TestParamInfo<QuantFormat>& info) { return format_name(info.param); });

}  // namespace
}  // namespace lamina::cudaexec
