// Host entry points to single GPU kernels, for tests and benchmarks that
// compare them with libquant's reference: host buffers in, host buffers out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "lamina/quant/format.h"

namespace lamina::cudaexec {

// Quantizes n_rows rows of n_in f32 values into the activation format the
// GPU pairs with `weight_format`; returns the rows' blocks back to back
// (quant::row_bytes each), to compare with quant::quantize_row_ref.
std::vector<uint8_t> check_quantize_activations(quant::QuantFormat weight_format, const float* x, uint32_t n_in,
                                                uint32_t n_rows);

// RMSNorm of n_rows rows of n values (times w[n], eps) on the GPU, in the
// launch that also quantizes them for `weight_format` (the decode step's
// norm before a matrix product). Fills `normed` with the f32 rows and
// returns the quantized blocks as check_quantize_activations does; returns
// an empty vector where that launch does not cover the format or length.
std::vector<uint8_t> check_norm_quantize(quant::QuantFormat weight_format, const float* x, const float* w, float eps,
                                         uint32_t n, uint32_t n_rows, std::vector<float>& normed);

// SiLU(gate) * up for n_rows rows of n values on the GPU, in the launch that
// also quantizes them for `weight_format` (the FFN's activation before the
// down projection). Fills `out` with the f32 rows and returns the quantized
// blocks as check_quantize_activations does; returns an empty vector where
// that launch does not cover the format or length.
std::vector<uint8_t> check_silu_quantize(quant::QuantFormat weight_format, const float* gate, const float* up,
                                         uint32_t n, uint32_t n_rows, std::vector<float>& out);

// Which kernel check_matmul runs: the one matmul() picks for the shape, or
// the tensor-core kernel whatever the row count (also for one row).
enum class MatmulPath { Auto, TensorCores };

// y[r * n_out + o] = dot(weight row o, x row r) through the GPU matmul (with
// the activations quantized on the GPU). Optional bias[n_out] and
// residual[n_rows * n_out] (added in place: the kernel gets residual == y).
// With MatmulPath::TensorCores, empty for a format that kernel lacks; `tile`
// (0 .. kMmaTileShapes - 1) then forces a tile shape, -1 lets it pick.
std::vector<float> check_matmul(quant::QuantFormat weight_format, const void* w, uint32_t n_out, uint32_t n_in,
                                const float* x, uint32_t n_rows, const float* bias = nullptr,
                                const float* residual = nullptr, MatmulPath path = MatmulPath::Auto, int tile = -1);

// matmul() of n_batch matrices (w: one after another, each n_out rows of
// n_in values) in one batched launch, as latent attention runs its per-head
// products: x [n_rows][n_batch][n_in], matrix b reading x[.][b]; the result
// is [n_rows][n_batch][n_out].
std::vector<float> check_matmul_batched(quant::QuantFormat weight_format, const void* w, uint32_t n_batch,
                                        uint32_t n_out, uint32_t n_in, const float* x, uint32_t n_rows);

// matmul() grouped as a mixture's experts run: matrix b of n_batch (w as in
// check_matmul_batched) on rows [first[b], first[b + 1]) of x [first.back()
// rows][n_in], its output into the same rows of the result
// [first.back()][n_out]; the offsets go to the device as an earlier
// kernel's output would be.
std::vector<float> check_matmul_grouped(quant::QuantFormat weight_format, const void* w, uint32_t n_out,
                                        uint32_t n_in, const float* x, const std::vector<uint32_t>& first);

// One matrix of check_matmul_group.
struct CheckMatrix {
  quant::QuantFormat format = quant::QuantFormat::F32;
  const void* w = nullptr;  // n_out rows of n_in values
  uint32_t n_out = 0;
  const float* bias = nullptr;  // optional, n_out
};

// The products of every matrix with the same x rows through ONE grouped
// call (matrices of one activation format share one activation buffer);
// result i is [n_rows x mats[i].n_out].
std::vector<std::vector<float>> check_matmul_group(const std::vector<CheckMatrix>& mats, uint32_t n_in,
                                                   const float* x, uint32_t n_rows);

// Rows `ids` of w dequantized on the GPU, [ids.size() x n_cols].
std::vector<float> check_gather_rows(quant::QuantFormat format, const void* w, uint32_t n_rows_w, uint32_t n_cols,
                                     const std::vector<int32_t>& ids);

// Timing of the matvec (one activation row) on device-resident copies of w
// (rotated, together larger than the L2 cache): median microseconds per
// launch over batches of back-to-back launches, `reps` launches in all,
// after a warm-up.
double time_matvec_us(quant::QuantFormat weight_format, const void* w, uint32_t n_out, uint32_t n_in, int reps);

// Timing of matmul() with n_rows activation rows, as time_matvec_us. `tile`
// forces a tensor-core tile shape (0 .. kMmaTileShapes - 1, in the order
// the benchmark names them; -1: the one matmul() picks), for choosing among them.
inline constexpr int kMmaTileShapes = 9;
double time_matmul_us(quant::QuantFormat weight_format, const void* w, uint32_t n_out, uint32_t n_in,
                      uint32_t n_rows, int reps, int tile = -1);

// Attention of one sequence's n_rows newest tokens (positions past ..
// past + n_rows - 1, all query heads) over a cache holding its keys and
// values for positions 0 .. past + n_rows - 1.
struct AttentionCheck {
  uint32_t n_head = 0, n_head_kv = 0, head_dim = 0;
  float scale = 1.0f;
  float softcap = 0.0f;  // 0: none
  uint32_t window = 0;   // 0: every earlier position
  uint32_t past = 0, n_rows = 0;
  const float* sinks = nullptr;  // host, n_head logits (gpt-oss's attention sinks); null: none
};

// How check_attention launches: as the executor chooses for a prompt chunk,
// one span per block (folded by a second kernel), every span of a tile in
// one block, or each row alone as a decode step does (tiles of one token,
// spans covering the whole cache).
enum class AttentionSplit { Auto, PerSpan, PerTile, Decode };

// out[r * n_head * head_dim + head * head_dim + d]; q [n_rows][n_head *
// head_dim], k and v [past + n_rows][n_head_kv * head_dim] in f32 (the cache
// stores them as f16). Empty where the split is unsupported for the shape.
std::vector<float> check_attention(const AttentionCheck& c, const float* q, const float* k, const float* v,
                                   AttentionSplit split);

// Multi-head latent attention, absorbed: every head attends over one key
// row per position of key_dim values, whose last value_dim are the values.
struct LatentAttentionCheck {
  uint32_t n_head = 0, key_dim = 0, value_dim = 0;
  float scale = 1.0f;
  uint32_t past = 0, n_rows = 0;
};

// out [n_rows][n_head * value_dim] of queries q [n_rows][n_head * key_dim]
// over keys [past + n_rows][key_dim] (f32; the cache stores them as f16),
// all rows in one launch, or (decode) each row alone over spans covering
// the whole cache.
std::vector<float> check_latent_attention(const LatentAttentionCheck& c, const float* q, const float* keys,
                                          bool decode);

// Median microseconds of one attention launch (and its combine pass) for
// the shape, on random inputs, as time_matvec_us.
double time_attention_us(const AttentionCheck& c, AttentionSplit split, int reps);

// Device-to-device copy bandwidth: bytes read plus bytes written per second
// (GB/s) of cudaMemcpy over `bytes`, median of `reps`.
double copy_bandwidth_gbs(std::size_t bytes, int reps);

}  // namespace lamina::cudaexec
