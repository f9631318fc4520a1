// The GPU entry points of a build without CUDA: they say so.
#include "lamina/model/gpu_forward.h"

namespace lamina::model {

std::string ParityReport::summary() const { return "no GPU in this build"; }

bool gpu_available() { return false; }

double default_parity_cosine(const Model&) { return 0.9999; }

std::string gpu_description() { return "this build of Lamina has no CUDA support (rebuild with -Dcuda=enabled)"; }

std::unique_ptr<Forward> make_gpu_forward(const Model&, const ForwardOptions&, const GpuOptions&, ParityReport*) {
  throw ModelError("the GPU is not available: " + gpu_description());
}

}  // namespace lamina::model
