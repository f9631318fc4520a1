// The CUDA backend module: the GPU forward pass over libcudaexec, which
// libmodel loads at run time (backend/module_abi.h) and checks against its
// CPU path (the parity gate) before it is used.
#include <algorithm>
#include <sstream>

#include "backend/module_abi.h"
#include "backend_config.h"  // LAMINA_VERSION
#include "lamina/cudaexec/executor.h"

namespace lamina::model {
namespace {

// The tables the CPU path computes, lent to the executor so both use the same values.
cudaexec::ExecutorInputs executor_inputs(const Model& model, bool exact_activations, const backend::Host& host) {
  const ModelConfig& c = model.config();
  const Weights& w = model.weights();
  return {.rope_inv_freq = host.rope_inverse_frequencies(c, w, false),
          .rope_inv_freq_local = host.rope_inverse_frequencies(c, w, true),
          .rope_magnitude = host.rope_magnitude(c),
          .gelu_f16_table = exact_activations ? nullptr : host.gelu_f16_table()};
}

// The GPUs the layers or tensors are split over; empty for one GPU.
std::vector<int> split_devices(const GpuOptions& g) {
  if (g.tensor_parallel > 0) {
    if (g.split != SplitMode::None) throw ModelError("GPU options: a split mode and tensor parallelism at once");
    return g.devices;
  }
  if (g.split == SplitMode::None) return {};
  if (!g.devices.empty()) return g.devices;
  std::vector<int> all(static_cast<std::size_t>(cudaexec::device_count()));
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  return all;
}

class GpuForward final : public Forward {
 public:
  GpuForward(const Model& model, const ForwardOptions& o, const GpuOptions& g, const backend::Host& host)
      : model_(model),
        exec_(model.config(), model.weights(), executor_inputs(model, o.exact_activations, host),
              {.device = g.device,
               .devices = split_devices(g),
               .tensor_parallel = g.tensor_parallel,
               .n_ctx = context_size(model.config(), o.n_ctx),
               .n_seq = o.n_seq,
               .kv_blocks = o.kv_blocks,
               .max_batch = o.max_batch,
               .max_logit_rows = 0,
               .use_graphs = g.use_graphs}) {}

  std::span<const float> decode(std::span<const TokenInput> batch) override {
    std::size_t wanted = 0;
    for (const auto& t : batch) wanted += t.logits ? 1 : 0;
    logits_.resize(wanted * model_.config().n_vocab);
    run([&] { exec_.forward(batch, logits_.data()); });
    return logits_;
  }

  std::vector<int32_t> decode_greedy(std::span<const TokenInput> batch) override {
    std::vector<int32_t> ids(static_cast<std::size_t>(std::count_if(
        batch.begin(), batch.end(), [](const TokenInput& t) { return t.logits; })));
    run([&] { exec_.forward_argmax(batch, ids.data()); });
    return ids;
  }

  std::vector<float> trace_last_token(std::span<const TokenInput> batch, std::vector<float>& logits) override {
    std::vector<float> trace;
    run([&] { trace = exec_.trace_last_token(batch, logits); });
    return trace;
  }

  std::span<const float> hidden_states(std::span<const TokenInput> batch) override {
    std::size_t wanted = 0;
    for (const auto& t : batch) wanted += t.logits ? 1 : 0;
    hidden_.resize(wanted * model_.config().n_embd);
    run([&] { exec_.hidden_states(batch, hidden_.data()); });
    return hidden_;
  }

  uint32_t kv_blocks() const override { return exec_.kv_blocks(); }
  void set_block_table(uint32_t seq, std::span<const uint32_t> blocks) override {
    run([&] { exec_.set_block_table(seq, blocks); });
  }
  void copy_kv_block(uint32_t src, uint32_t dst, uint32_t n_pos) override {
    run([&] { exec_.copy_kv_block(src, dst, n_pos); });
  }
  std::size_t kv_block_bytes() const override { return exec_.kv_block_bytes(); }

  const ModelConfig& config() const override { return model_.config(); }
  uint32_t n_ctx() const override { return exec_.n_ctx(); }
  uint32_t n_seq() const override { return exec_.n_seq(); }
  std::size_t kv_cache_bytes() const override { return exec_.memory_use().kv_cache; }
  std::string backend_name() const override {
    const std::size_t n = exec_.devices().size();
    const std::string how = exec_.tensor_parallel() > 0 ? ", tensor parallel" : n > 1 ? ", layers split" : "";
    return "CUDA (" + (n > 1 ? std::to_string(n) + " x " : std::string()) + exec_.device().name + how + ")";
  }
  std::string device_memory_report() const override {
    const auto per = exec_.memory_use_per_device();
    const auto ids = exec_.devices();
    std::ostringstream s;
    for (std::size_t i = 0; i < per.size(); ++i) {
      const auto& m = per[i];
      s << (i ? "; " : "") << "GPU " << (per.size() > 1 ? std::to_string(ids[i]) + " " : std::string())
        << "memory: weights " << (m.weights >> 20) << " MiB + KV cache " << (m.kv_cache >> 20) << " MiB + workspace "
        << (m.workspace >> 20) << " MiB = " << ((m.weights + m.kv_cache + m.workspace) >> 20) << " MiB";
    }
    s << "; graphs " << (exec_.graphs_enabled() ? "on" : "off") << " (" << exec_.graphs_captured() << " captured)";
    return s.str();
  }

 private:
  // libcudaexec reports with CudaError; callers of libmodel see ModelError.
  template <typename F>
  void run(F&& f) {
    try {
      f();
    } catch (const cudaexec::CudaError& e) {
      throw ModelError(e.what());
    }
  }

  const Model& model_;
  cudaexec::Executor exec_;
  std::vector<float> logits_, hidden_;
};

int cuda_device_count() { return cudaexec::device_count(); }

std::string describe_cuda_devices() {
  const int n = cudaexec::device_count();
  if (n == 0) return "no CUDA device visible";
  std::ostringstream s;
  for (int i = 0; i < n; ++i) {
    const auto d = cudaexec::device_info(i);
    s << (i ? "; " : "") << i << ": " << d.name << ", " << (d.total_bytes >> 30) << " GiB, cc " << d.cc_major << "."
      << d.cc_minor;
  }
  return s.str();
}

std::unique_ptr<Forward> make_cuda_forward(const Model& model, const ForwardOptions& options, const GpuOptions& gpu,
                                           const backend::Host& host) {
  try {
    return std::make_unique<GpuForward>(model, options, gpu, host);
  } catch (const cudaexec::CudaError& e) {
    throw ModelError(e.what());
  }
}

constexpr backend::Api kApi{.device_count = cuda_device_count, .describe_devices = describe_cuda_devices,
                            .make_forward = make_cuda_forward};
constexpr backend::Entry kEntry{
    .abi = backend::kAbi, .version = LAMINA_VERSION, .layout = backend::layout_fingerprint(), .api = &kApi};

}  // namespace
}  // namespace lamina::model

// The module's one exported symbol (backend::kEntrySymbol).
extern "C" __attribute__((visibility("default"))) const lamina::model::backend::Entry* lamina_model_backend_entry() {
  return &lamina::model::kEntry;
}
