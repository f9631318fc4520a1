#include "lamina/model/gpu_forward.h"

namespace lamina::model {

std::optional<Device> parse_device(std::string_view name) {
  if (name == "cpu") return Device::Cpu;
  if (name == "cuda" || name == "gpu") return Device::Cuda;
  if (name == "auto") return Device::Auto;
  return std::nullopt;
}

std::unique_ptr<Forward> make_forward(const Model& model, const ForwardOptions& options, Device device,
                                      const GpuOptions& gpu, std::string* note) {
  if (device == Device::Cpu) return std::make_unique<CpuForward>(model, options);
  if (device == Device::Cuda) return make_gpu_forward(model, options, gpu);
  if (gpu_available(gpu)) {
    try {
      return make_gpu_forward(model, options, gpu);
    } catch (const ModelError& e) {
      if (note) *note = std::string("GPU not used: ") + e.what();
    }
  } else if (note) {
    *note = "GPU not used: " + gpu_description(gpu);
  }
  return std::make_unique<CpuForward>(model, options);
}

}  // namespace lamina::model
