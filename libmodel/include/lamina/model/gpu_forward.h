// The forward pass on an NVIDIA GPU, with a parity gate against the CPU path
// at load. The GPU code is a backend module that libmodel loads at run time
// (lamina-model-cuda.so, built where Lamina is built with CUDA, and shipped
// apart from the library): without it, or without a device,
// make_gpu_forward throws and gpu_available() is false, and
// gpu_description() says which.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lamina/model/forward.h"
#include "lamina/model/export.h"

namespace lamina::model {

// How a model spreads over several GPUs.
enum class SplitMode {
  None,   // one GPU (GpuOptions::device)
  Layer,  // consecutive layers per GPU, the residual stream passed on (llama.cpp's `--split-mode layer`)
};

struct LAMINA_MODEL_API GpuOptions {
  int device = 0;
  // With SplitMode::Layer, each GPU of `devices` (empty: every visible one)
  // holds its layers' weights and KV cache, and the results are those of
  // one GPU bit for bit.
  SplitMode split = SplitMode::None;
  std::vector<int> devices{};
  // N > 0 (1, 2 or 4; without a split mode): the heads, FFN columns, KV
  // cache and vocabulary split over N GPUs (`devices` in rank order, or the
  // first N), which talk through NCCL; the results are bit-identical for
  // every N (1 runs the same arithmetic on one GPU). Dense models only.
  uint32_t tensor_parallel = 0;
  bool use_graphs = true;  // decode steps as CUDA graphs (eager when false)
  // At load, run a probe through the CPU and the GPU and refuse the GPU when
  // the last position's logits differ (cosine below the threshold).
  bool parity_check = true;
  // 0 chooses by weight type (default_parity_cosine).
  double parity_min_cosine = 0;
  // The folder holding the backend module (lamina-model-cuda.so); empty: the
  // installed one, <libdir>/lamina/backends<soversion>/ beside
  // liblamina-model.so wherever that is (a build tree's is
  // <build>/libmodel/backends/cuda).
  std::string backend_dir;
};

// What the parity probe measured.
struct LAMINA_MODEL_API ParityReport {
  double cosine = 1.0;
  double max_abs_diff = 0.0;
  int32_t cpu_argmax = -1;
  int32_t gpu_argmax = -1;
  double cpu_margin = 0.0;  // CPU's best minus second-best logit
  double threshold = 0.0;   // the cosine required
  int first_divergent_layer = -2;  // -1: the embedding; -2: none below the threshold
  // Cosine of the hidden states after the embedding and after each layer.
  std::vector<double> layer_cosine;
  std::string summary() const;
};

// 0.9999 for models whose matrices are all F32/F16/BF16: activations stay
// f32 and only the summation order differs. 0.99 when a matrix is
// quantized: the GPU quantizes activations exactly as the CPU kernels do and
// its integer block dots are exact, but a different f32 summation order
// sometimes puts a value on the other side of an int8 rounding boundary, and
// each such flip moves every later layer a little. The hidden states agree
// to ~1e-14 (1 - cosine) until the first flip; measured on synthetic
// random-weight models the logits end at 0.9996 (0.5B, 1.5B) and 0.9955
// (Llama-3-8B shape, 32 layers, Q4_K_M). A wrong kernel gives far lower.
LAMINA_MODEL_API double default_parity_cosine(const Model& model);

// True when the CUDA backend module loads and a device is visible.
LAMINA_MODEL_API bool gpu_available(const GpuOptions& gpu = {});

// Describes the devices for messages ("0: NVIDIA H200, 139 GiB, cc 9.0"), or
// why there are none: the module is not installed, failed to load (the
// loader's message) or is of another version (each naming its path), or no
// CUDA device is visible.
LAMINA_MODEL_API std::string gpu_description(const GpuOptions& gpu = {});

// The GPU forward pass; throws ModelError when the backend module cannot be
// used or no device is visible (gpu_description's reason), the model does
// not fit, the architecture is not supported on the GPU, or the parity gate
// fails (the message carries the report). `report`, when given, receives the parity figures.
LAMINA_MODEL_API std::unique_ptr<Forward> make_gpu_forward(const Model& model, const ForwardOptions& options,
                                                           const GpuOptions& gpu = {}, ParityReport* report = nullptr);

enum class Device { Cpu, Cuda, Auto };

// "cpu", "cuda" or "auto"; nullopt otherwise.
LAMINA_MODEL_API std::optional<Device> parse_device(std::string_view name);

// The forward pass on `device`: Cuda fails with ModelError when the GPU
// cannot be used; Auto takes the GPU when it is available and passes the
// parity gate, else the CPU, and says why in `note` (when given).
LAMINA_MODEL_API std::unique_ptr<Forward> make_forward(const Model& model, const ForwardOptions& options, Device device,
                                                       const GpuOptions& gpu = {}, std::string* note = nullptr);

}  // namespace lamina::model
