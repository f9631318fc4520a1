#include "tensor_dump.h"

#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "lamina/quant/format.h"
#include "lamina/quant/reference.h"

namespace lamina::inspect {

void dump_tensor_f32(const gguf::GgufFile& file, std::string_view name,
                     const std::filesystem::path& out) {
  static_assert(std::endian::native == std::endian::little, "f32 dumps are little-endian");
  const gguf::TensorInfo* t = file.find_tensor(name);
  if (t == nullptr) throw std::runtime_error("no tensor named '" + std::string(name) + "'");
  const auto format = quant::format_from_id(static_cast<uint32_t>(t->type));
  // Every type libquant knows dequantizes, the activation-only ones (Q8_1,
  // Q8_K) included: a file may hold them although no model reads them.
  if (!format)
    throw std::runtime_error("tensor '" + t->name + "' is stored as " +
                             std::string(gguf::tensor_type_name(t->type)) +
                             ", which lamina cannot dequantize");

  std::ofstream stream(out, std::ios::binary | std::ios::trunc);
  if (!stream) throw std::runtime_error(out.string() + ": cannot create: " + std::strerror(errno));
  const uint64_t row_length = t->ne[0];
  const uint64_t stride = t->row_bytes();
  std::vector<float> row(row_length);
  for (uint64_t r = 0; r < t->n_rows(); ++r) {
    quant::dequantize_row_ref(*format, t->data.data() + r * stride, row.data(), row_length);
    stream.write(reinterpret_cast<const char*>(row.data()),
                 static_cast<std::streamsize>(row.size() * sizeof(float)));
  }
  stream.flush();
  if (!stream) throw std::runtime_error(out.string() + ": write failed");
}

}  // namespace lamina::inspect
