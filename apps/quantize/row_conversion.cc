#include "row_conversion.h"

#include <atomic>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "lamina/quant/reference.h"

namespace lamina::quantize {

std::optional<quant::QuantFormat> quant_format_of(gguf::TensorType type) {
  const auto format = quant::format_from_id(static_cast<uint32_t>(type));
  if (!format || !quant::format_traits(*format).is_weight_format) return std::nullopt;
  return format;
}

RowSource stored_rows(quant::QuantFormat format, const std::byte* data, uint64_t row_length) {
  const uint64_t stride = quant::row_bytes(format, row_length);
  return [=](uint64_t row, std::span<float> out) {
    quant::dequantize_row_ref(format, data + row * stride, out.data(), out.size());
  };
}

void convert_rows(const RowSource& source, uint64_t n_rows, uint64_t row_length,
                  quant::QuantFormat format, std::span<std::byte> out, quant::ThreadPool& pool) {
  const uint64_t stride = quant::row_bytes(format, row_length);
  if (out.size() != n_rows * stride)
    throw std::invalid_argument("convert_rows: output holds " + std::to_string(out.size()) +
                                " bytes, " + std::to_string(n_rows * stride) + " needed");
  constexpr uint64_t kNone = ~uint64_t{0};
  std::atomic<uint64_t> first_bad_row{kNone};
  pool.parallel_for(n_rows, 1, [&](std::size_t begin, std::size_t end) {
    std::vector<float> values(row_length);
    for (std::size_t row = begin; row < end; ++row) {
      source(row, values);
      bool finite = true;
      for (float v : values) finite &= std::isfinite(v);
      if (!finite) {
        uint64_t seen = first_bad_row.load();
        while (row < seen && !first_bad_row.compare_exchange_weak(seen, row)) {
        }
        continue;
      }
      quant::quantize_row_ref(format, values.data(), out.data() + row * stride, row_length);
    }
  });
  if (first_bad_row.load() != kNone)
    throw std::runtime_error("row " + std::to_string(first_bad_row.load()) +
                             " holds a NaN or an infinity");
}

}  // namespace lamina::quantize
