// Where the parts of one quantized activation row lie on the device.
//
// A row starts with the plain GGUF blocks (what quantize_row_ref makes, what
// check_quantize_activations returns). For Q8_0/Q8_1/Q8_K the same values
// follow unpacked, because the matmul kernels read those: the int8 values
// back to back (16-byte aligned, so a lane loads 16 of them at once), one f32
// scale per block, and int32 sums of the values (per 32-value block for
// Q8_0/Q8_1, exact unlike Q8_1's f16 `s`; per 16 values for Q8_K, as bsums).
//
// Q8_K rows also carry their 32-value and 16-value sums split as
// sum = 64 h + l (l in 0..63, h a signed byte), as int8 operands for the
// tensor cores' minimum products: per super-block 32 bytes each, h bytes at
// 0 and l bytes at 16 (8 of each for the 32-value sums, 16 for the 16-value
// sums; unused bytes are never read as anything but integers times zero).
#pragma once

#include <cstddef>
#include <cstdint>

#include "lamina/quant/format.h"

namespace lamina::cudaexec::detail {

struct ActivationLayout {
  std::size_t blocks_bytes = 0;  // plain blocks (f32 values for F32)
  std::size_t qs_offset = 0;     // int8 values, n_in of them
  std::size_t scale_offset = 0;  // f32 per block
  std::size_t sum_offset = 0;    // int32 per block (Q8_0/Q8_1) or per 16 values (Q8_K)
  std::size_t split32_offset = 0;  // Q8_K: 32 bytes per super-block (see above)
  std::size_t split16_offset = 0;  // Q8_K: 32 bytes per super-block
  std::size_t stride = 0;        // bytes from one row to the next (multiple of 16)
};

inline constexpr std::size_t align16(std::size_t n) { return (n + 15) / 16 * 16; }

// Throws std::invalid_argument for a format other than F32/Q8_0/Q8_1/Q8_K or
// a partial block.
ActivationLayout activation_layout(quant::QuantFormat act_format, uint32_t n_in);

}  // namespace lamina::cudaexec::detail
