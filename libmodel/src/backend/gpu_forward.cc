// libmodel's GPU entry points: the CUDA forward pass comes from the backend
// module (loaded at run time), and is compared with the CPU path by the
// parity gate before it is used.
#include "lamina/model/gpu_forward.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <sstream>

#include "backend/module_loader.h"

namespace lamina::model {
namespace {

double cosine(const float* a, const float* b, std::size_t n) {
  double ab = 0, aa = 0, bb = 0;
  for (std::size_t i = 0; i < n; ++i) {
    ab += double{a[i]} * b[i];
    aa += double{a[i]} * a[i];
    bb += double{b[i]} * b[i];
  }
  return aa > 0 && bb > 0 ? ab / std::sqrt(aa * bb) : (aa == bb ? 1.0 : 0.0);
}

int32_t argmax(const std::vector<float>& v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

// A few positions of fixed, spread-out token ids; the last one is compared.
std::vector<TokenInput> probe_batch(const ModelConfig& c) {
  const int32_t V = static_cast<int32_t>(c.n_vocab);
  const int32_t ids[] = {1 % V, V / 7, V / 3, V / 2, V - 1};
  std::vector<TokenInput> batch;
  for (uint32_t i = 0; i < std::size(ids); ++i) batch.push_back({ids[i], i, 0, i + 1 == std::size(ids)});
  return batch;
}

ParityReport check_parity(const Model& model, Forward& gpu, const ForwardOptions& o, double min_cosine) {
  const ModelConfig& c = model.config();
  ForwardOptions cpu_options = o;
  cpu_options.n_ctx = 16;
  cpu_options.n_seq = 1;
  cpu_options.kv_type = KvType::F16;  // the GPU cache holds f16
  CpuForward cpu(model, cpu_options);
  const auto batch = probe_batch(c);
  std::vector<float> cpu_logits, gpu_logits;
  const auto cpu_trace = cpu.trace_last_token(batch, cpu_logits);
  const auto gpu_trace = gpu.trace_last_token(batch, gpu_logits);

  ParityReport r;
  r.cosine = cosine(cpu_logits.data(), gpu_logits.data(), cpu_logits.size());
  for (std::size_t i = 0; i < cpu_logits.size(); ++i)
    r.max_abs_diff = std::max(r.max_abs_diff, double{std::fabs(cpu_logits[i] - gpu_logits[i])});
  r.cpu_argmax = argmax(cpu_logits);
  r.gpu_argmax = argmax(gpu_logits);
  // The CPU's margin between its best and second-best token: a smaller margin
  // than the difference between the two sides makes either choice valid.
  std::vector<float> sorted = cpu_logits;
  std::nth_element(sorted.begin(), sorted.begin() + 1, sorted.end(), std::greater<float>());
  r.cpu_margin = sorted.size() > 1 ? double{sorted[0]} - sorted[1] : 0.0;
  for (uint32_t layer = 0; layer <= c.n_layer; ++layer) {
    const std::size_t off = std::size_t{layer} * c.n_embd;
    r.layer_cosine.push_back(cosine(cpu_trace.data() + off, gpu_trace.data() + off, c.n_embd));
    if (r.layer_cosine.back() < min_cosine && r.first_divergent_layer == -2)
      r.first_divergent_layer = static_cast<int>(layer) - 1;
  }
  return r;
}

const backend::Loaded& cuda_backend(const GpuOptions& gpu) {
  return backend::load(backend::module_path(gpu.backend_dir, backend::kCudaModuleName));
}

}  // namespace

std::string ParityReport::summary() const {
  std::ostringstream s;
  s << "logits cosine " << cosine << ", max |diff| " << max_abs_diff << ", argmax CPU " << cpu_argmax << " / GPU "
    << gpu_argmax;
  if (first_divergent_layer == -1) s << ", hidden states differ from the embedding on";
  if (first_divergent_layer >= 0) s << ", hidden states first differ after layer " << first_divergent_layer;
  if (first_divergent_layer != -2) {
    // The whole trajectory shows whether one layer breaks or small
    // differences grow layer by layer.
    s << "; 1 - cosine per layer (embedding first):";
    s.precision(2);
    for (double c : layer_cosine) s << ' ' << std::scientific << 1.0 - c;
  }
  return s.str();
}

bool gpu_available(const GpuOptions& gpu) {
  const backend::Loaded& b = cuda_backend(gpu);
  return b.api && b.api->device_count() > 0;
}

double default_parity_cosine(const Model& model) {
  const auto is_float = [](quant::QuantFormat f) {
    return f == quant::QuantFormat::F32 || f == quant::QuantFormat::F16 || f == quant::QuantFormat::BF16;
  };
  const Weights& w = model.weights();
  bool all_float = is_float(w.output.format);
  for (const LayerWeights& l : w.layers)
    for (const Matrix* m : {&l.wq, &l.wk, &l.wv, &l.wqkv, &l.wo, &l.w_gate, &l.w_up, &l.w_down, &l.router,
                            &l.gate_exps, &l.up_exps, &l.down_exps})
      if (*m && !is_float(m->format)) all_float = false;
  return all_float ? 0.9999 : 0.99;
}

std::string gpu_description(const GpuOptions& gpu) {
  const backend::Loaded& b = cuda_backend(gpu);
  return b.api ? b.api->describe_devices() : b.error;
}

std::unique_ptr<Forward> make_gpu_forward(const Model& model, const ForwardOptions& options, const GpuOptions& gpu,
                                          ParityReport* report) {
  // The GPU executor keeps its own f16 cache; a q8_0 one has no GPU kernels.
  if (options.kv_type == KvType::Q8_0)
    throw ModelError("the q8_0 KV cache runs on the CPU only: use --kv-type f16 (or f32) with the GPU, "
                     "or --device cpu");
  const backend::Loaded& b = cuda_backend(gpu);
  if (!b.api) throw ModelError("the GPU is not available: " + b.error);
  if (b.api->device_count() == 0) throw ModelError("the GPU is not available: " + b.api->describe_devices());
  std::unique_ptr<Forward> fwd = b.api->make_forward(model, options, gpu, backend::host());
  if (!gpu.parity_check) return fwd;
  const double threshold = gpu.parity_min_cosine > 0 ? gpu.parity_min_cosine : default_parity_cosine(model);
  ParityReport r = check_parity(model, *fwd, options, threshold);
  r.threshold = threshold;
  if (report) *report = r;
  const bool argmax_ok = r.cpu_argmax == r.gpu_argmax || r.cpu_margin <= 2 * r.max_abs_diff;
  if (r.cosine < threshold || !argmax_ok)
    throw ModelError("GPU parity check failed (threshold cosine " + std::to_string(threshold) +
                     "): " + r.summary() +
                     "; the GPU is not used (GpuOptions::parity_check = false skips this check)");
  return fwd;
}

}  // namespace lamina::model
