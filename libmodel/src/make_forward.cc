#include "lamina/model/gpu_forward.h"

namespace lamina::model {

std::optional<Device> parse_device(std::string_view name) {
  if (name == "cpu") return Device::Cpu;
  if (name == "cuda" || name == "gpu") return Device::Cuda;
  if (name == "auto") return Device::Auto;
  return std::nullopt;
}

namespace {

// Features of the CPU forward pass the GPU executor has no place for yet,
// refused by name rather than run into wrong logits.
void check_gpu_can_run(const Model& model) {
  const ModelConfig& c = model.config();
  if (c.arch->attention_sinks || c.rope.yarn_orig_ctx > 0 || c.arch->expert_activation != ExpertActivation::Silu)
    throw ModelError(std::string(c.arch->name) +
                     ": the GPU executor has no attention sinks, YaRN RoPE or clamped-SwiGLU experts; "
                     "run this model on the CPU");
}

}  // namespace

std::unique_ptr<Forward> make_forward(const Model& model, const ForwardOptions& options, Device device,
                                      const GpuOptions& gpu, std::string* note) {
  if (device == Device::Cpu) return std::make_unique<CpuForward>(model, options);
  if (device == Device::Cuda) {
    check_gpu_can_run(model);
    return make_gpu_forward(model, options, gpu);
  }
  if (gpu_available()) {
    try {
      check_gpu_can_run(model);
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
