// The build without libquant (-Dlibraries=gguf): lamina-inspect keeps its
// options, and a dump explains why it cannot be done.
#include <stdexcept>

#include "tensor_dump.h"

namespace lamina::inspect {

void dump_tensor_f32(const gguf::GgufFile&, std::string_view, const std::filesystem::path&) {
  throw std::runtime_error("--dump-f32 needs libquant, which this build leaves out");
}

}  // namespace lamina::inspect
