// lamina-inspect --tensor NAME --dump-f32 OUT: a tensor's values as raw
// little-endian f32, whatever format it is stored in.
#pragma once

#include <filesystem>
#include <string_view>

#include "lamina/gguf/file.h"

namespace lamina::inspect {

// Writes the tensor `name` of `file`, dequantized, to `out`. Throws
// std::runtime_error for an unknown tensor, a type this build cannot
// dequantize, or an I/O error.
void dump_tensor_f32(const gguf::GgufFile& file, std::string_view name,
                     const std::filesystem::path& out);

}  // namespace lamina::inspect
