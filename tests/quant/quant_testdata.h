// Shared helpers for the tests that read ../shared/testdata/quant.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "lamina/gguf/file.h"

namespace lamina::quant::testing {

inline std::filesystem::path quant_testdata_dir() {
  return std::filesystem::path(LAMINA_TESTDATA_DIR) / "quant";
}

// The file's path, or empty if it does not exist (the caller skips).
inline std::filesystem::path quant_testdata_file(const std::string& name) {
  const std::filesystem::path path = quant_testdata_dir() / name;
  return std::filesystem::exists(path) ? path : std::filesystem::path{};
}

inline std::vector<float> tensor_as_f32(const gguf::TensorInfo& t) {
  std::vector<float> out(t.data.size() / sizeof(float));
  std::memcpy(out.data(), t.data.data(), out.size() * sizeof(float));
  return out;
}

// Bytes of row r of a tensor whose rows are `row_bytes` long.
inline std::span<const std::byte> tensor_row(const gguf::TensorInfo& t, size_t row_bytes, size_t r) {
  return t.data.subspan(r * row_bytes, row_bytes);
}

inline double rmse(std::span<const float> a, std::span<const float> b) {
  double sum = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = static_cast<double>(a[i]) - static_cast<double>(b[i]);
    sum += d * d;
  }
  return a.empty() ? 0.0 : std::sqrt(sum / static_cast<double>(a.size()));
}

// RMSE(a - b) / RMS(b).
inline double relative_rmse(std::span<const double> a, std::span<const float> b) {
  double err = 0.0;
  double ref = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = a[i] - static_cast<double>(b[i]);
    err += d * d;
    ref += static_cast<double>(b[i]) * static_cast<double>(b[i]);
  }
  return ref == 0.0 ? std::sqrt(err) : std::sqrt(err / ref);
}

}  // namespace lamina::quant::testing
