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
#include <algorithm>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#include "hwy/aligned_allocator.h"

namespace lamina::quant {

HWY_EXPORT(QuantizeActivationRows);
HWY_EXPORT(UnpackActivationRows);

namespace {

constexpr size_t kRowAlign = 64;

size_t round_up(size_t n, size_t multiple) { return (n + multiple - 1) / multiple * multiple; }

// A growable aligned array whose contents need not survive growth.
template <class T>
struct Buffer {
  hwy::AlignedFreeUniquePtr<T[]> data;
  size_t capacity = 0;

  T* reserve(size_t n) {
    if (n > capacity) {
      data = hwy::AllocateAligned<T>(n);
      if (!data) throw std::bad_alloc();
      capacity = n;
    }
    return data.get();
  }
};

bool is_activation_format(QuantFormat f) {
  return f == QuantFormat::Q8_0 || f == QuantFormat::Q8_1 || f == QuantFormat::Q8_K ||
         f == QuantFormat::F32;
}

}  // namespace

struct QuantizedActivations::Storage {
  Buffer<uint8_t> blocks;
  Buffer<int8_t> values;
  Buffer<float> scales;
  Buffer<int32_t> block_sums;
  Buffer<int16_t> group_sums;
};

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
  const size_t block_elems = format_traits(format).block_elems;
  const size_t row_bytes = quant::row_bytes(format, n_cols);  // throws on a partial block
  const size_t blocks_per_row = n_cols / block_elems;
  if (!a.storage_) a.storage_ = std::make_unique<QuantizedActivations::Storage>();
  QuantizedActivations::Storage& s = *a.storage_;

  a.format_ = format;
  a.rows_ = n_rows;
  a.cols_ = n_cols;
  a.blocks_stride_ = round_up(row_bytes, kRowAlign);
  a.blocks_ = s.blocks.reserve(std::max<size_t>(1, n_rows * a.blocks_stride_));
  const bool quantized = format != QuantFormat::F32;
  a.values_stride_ = quantized ? round_up(n_cols, kRowAlign) : 0;
  a.blocks_per_row_ = quantized ? blocks_per_row : 0;
  a.groups_per_row_ = format == QuantFormat::Q8_K ? blocks_per_row * (kQK_K / 16) : 0;
  a.values_ = s.values.reserve(std::max<size_t>(1, n_rows * a.values_stride_));
  a.scales_ = s.scales.reserve(std::max<size_t>(1, n_rows * a.blocks_per_row_));
  a.block_sums_ = s.block_sums.reserve(std::max<size_t>(1, n_rows * a.blocks_per_row_));
  a.group_sums_ = s.group_sums.reserve(std::max<size_t>(1, n_rows * a.groups_per_row_));
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
