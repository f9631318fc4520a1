// QuantizedActivations storage, and the dispatch of activation
// quantization to the best SIMD target.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "activations.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "lamina/quant/activations.h"
#include "lamina/quant/thread_pool.h"
#include "simd_activations-inl.h"

HWY_BEFORE_NAMESPACE();
namespace lamina::quant::HWY_NAMESPACE {

void QuantizeActivationRows(const float* x, QuantizedActivations& out, ThreadPool* pool) {
  const size_t n_cols = out.cols();
  const auto rows = [&](size_t begin, size_t end) {
    for (size_t r = begin; r < end; ++r) act::QuantizeRow(x + r * n_cols, out, r);
  };
  if (pool != nullptr) {
    pool->parallel_for(out.rows(), 1, rows);
  } else {
    rows(0, out.rows());
  }
}

void UnpackActivationRows(QuantizedActivations& out) {
  for (size_t r = 0; r < out.rows(); ++r) act::UnpackRow(out, r);
}

}  // namespace lamina::quant::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <cstring>
#include <stdexcept>
#include <string>

#include "activations_access.h"

namespace lamina::quant {

HWY_EXPORT(QuantizeActivationRows);
HWY_EXPORT(UnpackActivationRows);

namespace {

constexpr size_t kRowAlign = 64;

size_t round_up(size_t n, size_t multiple) { return (n + multiple - 1) / multiple * multiple; }

bool is_activation_format(QuantFormat f) {
  return f == QuantFormat::Q8_0 || f == QuantFormat::Q8_1 || f == QuantFormat::Q8_K ||
         f == QuantFormat::F32;
}

}  // namespace

QuantizedActivations::QuantizedActivations() : storage_(std::make_unique<Storage>()) {}
QuantizedActivations::~QuantizedActivations() = default;
QuantizedActivations::QuantizedActivations(QuantizedActivations&&) noexcept = default;
QuantizedActivations& QuantizedActivations::operator=(QuantizedActivations&&) noexcept = default;

namespace detail {

void ActivationsAccess::reshape(QuantizedActivations& a, QuantFormat format, size_t n_rows,
                                size_t n_cols) {
  if (!is_activation_format(format)) {
    throw std::invalid_argument("activations: " + std::string(format_traits(format).name) +
                                " is not an activation format (Q8_0, Q8_1, Q8_K or F32)");
  }
  const size_t bytes = row_bytes(format, n_cols);  // throws on a partial block
  const size_t blocks_per_row = n_cols / format_traits(format).block_elems;
  if (!a.storage_) a.storage_ = std::make_unique<QuantizedActivations::Storage>();
  QuantizedActivations::Storage& s = *a.storage_;
  a.format_ = format;
  a.rows_ = n_rows;
  a.cols_ = n_cols;
  a.blocks_stride_ = round_up(bytes, kRowAlign);
  a.blocks_ = s.blocks.reserve(n_rows * a.blocks_stride_);

  const bool blocks32 = format == QuantFormat::Q8_0 || format == QuantFormat::Q8_1;
  const bool super_blocks = format == QuantFormat::Q8_K;
  s.values_stride = blocks32 ? round_up(n_cols, kGroupValues) : super_blocks ? n_cols : 0;
  s.lanes_stride = blocks32 ? round_up(blocks_per_row, kGroupBlocks) * kLanesPerBlock : 0;
  s.scales_stride = super_blocks ? blocks_per_row : 0;
  s.groups_stride = super_blocks ? blocks_per_row * 16 : 0;
  s.values.reserve(n_rows * s.values_stride);
  s.lane_scales.reserve(n_rows * s.lanes_stride);
  s.lane_neg_sums.reserve(n_rows * s.lanes_stride);
  s.lane_scaled_sums.reserve(n_rows * s.lanes_stride);
  s.scales.reserve(n_rows * s.scales_stride);
  // One zero pair past the last row: the packed Q2_K kernel reads group sums
  // in pairs and multiplies the second of the last pair by 0.
  int16_t* sums = s.group_sums.reserve(n_rows * s.groups_stride + 2);
  sums[n_rows * s.groups_stride] = sums[n_rows * s.groups_stride + 1] = 0;
}

}  // namespace detail

void quantize_activations(QuantFormat format, const float* x, size_t n_rows, size_t n_cols,
                          QuantizedActivations& out, ThreadPool* pool) {
  detail::ActivationsAccess::reshape(out, format, n_rows, n_cols);
  HWY_DYNAMIC_DISPATCH(QuantizeActivationRows)(x, out, pool);
}

void load_activation_blocks(QuantFormat format, const void* blocks, size_t n_rows, size_t n_cols,
                            QuantizedActivations& out) {
  detail::ActivationsAccess::reshape(out, format, n_rows, n_cols);
  const size_t bytes = row_bytes(format, n_cols);
  for (size_t r = 0; r < n_rows; ++r) {
    std::memcpy(detail::ActivationsAccess::blocks(out, r), static_cast<const uint8_t*>(blocks) + r * bytes,
                bytes);
  }
  HWY_DYNAMIC_DISPATCH(UnpackActivationRows)(out);
}

}  // namespace lamina::quant
#endif  // HWY_ONCE
