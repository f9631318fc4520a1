#include "lamina/model/gpu_forward.h"

namespace lamina::model {

std::optional<Device> parse_device(std::string_view name) {
  if (name == "cpu") return Device::Cpu;
  if (name == "cuda" || name == "gpu") return Device::Cuda;
  if (name == "auto") return Device::Auto;
  return std::nullopt;
}

namespace {

// What the GPU executor has no kernels for, refused by name before it is
// handed a model it would run wrong; empty when it has them.
std::string gpu_refusal(const Model& model) {
  const ModelConfig& c = model.config();
  if (c.latent_attention())
    return std::string(c.arch->name) + ": the GPU executor has no multi-head latent attention (attention." +
           "kv_lora_rank); run this model on the CPU";
  return {};
}

}  // namespace

std::unique_ptr<Forward> make_forward(const Model& model, const ForwardOptions& options, Device device,
                                      const GpuOptions& gpu, std::string* note) {
  if (device == Device::Cpu) return std::make_unique<CpuForward>(model, options);
  const std::string refusal = gpu_refusal(model);
  if (device == Device::Cuda) {
    if (!refusal.empty()) throw ModelError(refusal);
    return make_gpu_forward(model, options, gpu);
  }
  if (!refusal.empty()) {
    if (note) *note = "GPU not used: " + refusal;
  } else if (gpu_available()) {
    try {
      return make_gpu_forward(model, options, gpu);
    } catch (const ModelError& e) {
      if (note) *note = std::string("GPU not used: ") + e.what();
    }
  } else if (note) {
    *note = "GPU not used: " + gpu_description();
  }
  return std::make_unique<CpuForward>(model, options);
}

}  // namespace lamina::model
