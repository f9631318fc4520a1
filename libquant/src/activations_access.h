// Internal: write access to QuantizedActivations for the code that fills it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "lamina/quant/activations.h"

namespace lamina::quant::detail {

struct ActivationsAccess {
  // Sets format and shape, reusing the storage when it is large enough.
  // Throws std::invalid_argument if the format is not an activation format
  // or n_cols is not a multiple of its block size.
  static void reshape(QuantizedActivations& a, QuantFormat format, size_t n_rows, size_t n_cols);

  static uint8_t* blocks(QuantizedActivations& a, size_t r) {
    return a.blocks_ + r * a.blocks_stride_;
  }
  static int8_t* values(QuantizedActivations& a, size_t r) {
    return a.values_ + r * a.values_stride_;
  }
  static float* scales(QuantizedActivations& a, size_t r) {
    return a.scales_ + r * a.blocks_per_row_;
  }
  static int32_t* block_sums(QuantizedActivations& a, size_t r) {
    return a.block_sums_ + r * a.blocks_per_row_;
  }
  static int16_t* group_sums(QuantizedActivations& a, size_t r) {
    return a.group_sums_ + r * a.groups_per_row_;
  }
};

}  // namespace lamina::quant::detail
