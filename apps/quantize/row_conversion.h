// Converting a tensor row by row into a storage type, in parallel: the rows
// come as f32 from a source (a stored tensor, or generated values) and are
// quantized with libquant's reference quantizers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>

#include "lamina/gguf/types.h"
#include "lamina/quant/format.h"
#include "lamina/quant/thread_pool.h"

namespace lamina::quantize {

// The libquant format of a tensor type, or nullopt when libquant cannot
// quantize to or dequantize from it.
std::optional<quant::QuantFormat> quant_format_of(gguf::TensorType type);

// Fills `out` with the f32 values of row `row`. Called from several threads at
// once (different rows), so it must be thread-safe and must not throw.
using RowSource = std::function<void(uint64_t row, std::span<float> out)>;

// A source reading the rows of a tensor stored in `format` at `data`.
RowSource stored_rows(quant::QuantFormat format, const std::byte* data, uint64_t row_length);

// Quantizes `n_rows` rows of `row_length` values from `source` into `out`
// (exactly n_rows * row_bytes(format, row_length) bytes), rows split over the
// pool's threads. Throws std::runtime_error naming the first row that holds a
// NaN or an infinity, which no block format can represent.
void convert_rows(const RowSource& source, uint64_t n_rows, uint64_t row_length,
                  quant::QuantFormat format, std::span<std::byte> out, quant::ThreadPool& pool);

}  // namespace lamina::quantize
