// Small text helpers for the per-tensor progress lines of the tools.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace lamina::quantize {

// "[896, 151936]"
std::string shape_text(std::span<const uint64_t> shape);

// "512 B", "3.50 KiB", "1.27 GiB"
std::string byte_size_text(uint64_t bytes);

}  // namespace lamina::quantize
