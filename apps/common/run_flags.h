// The flags the apps that run a model share, declared once and mapped onto
// the library's option structs once; and the library's option names in its
// error messages put back as the flags that set them.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lamina/model/chat_prompt.h"
#include "lamina/model/forward.h"
#include "lamina/model/gpu_forward.h"
#include "lamina/model/model.h"
#include "lamina/model/sampler.h"

namespace lamina::apps {

struct RunFlags {
  uint32_t n_ctx = 0;          // per sequence slot; 0: the model's, at most 4096
  int n_threads = 0;           // 0: all
  uint32_t batch_size = 512;   // tokens per forward step
  std::string kv_type = "f16";
  uint32_t kv_size = 0;        // KV cache positions shared by all sequences; 0: every slot its whole context
  std::string device = "cpu";  // cpu, cuda or auto
  int gpu_index = 0;
  std::string split_mode = "none";  // none or layer
  std::vector<int> gpus;            // for --split-mode layer (empty: all visible) and --tensor-parallel
  unsigned tensor_parallel = 0;     // GPUs of tensor parallelism (0: none)
  bool parity_check = true;
  double parity_min_cosine = 0;  // 0: by weight type
  bool pack_weights = true;      // CPU: rearrange weights for the faster kernels
  bool pack_in_background = true;  // CPU: Q4_K/Q5_K packed by a background thread, not at load
  bool cuda_graphs = true;
  std::string backend_dir;  // folder of the CUDA backend module; empty: the installed one
};

// Flags an app may leave out of add_run_flags (lamina-bench takes lists of
// thread counts and contexts of its own).
enum RunFlag : unsigned {
  kCtxSizeFlag = 1u << 0,
  kThreadsFlag = 1u << 1,
  kCudaTuningFlags = 1u << 2,  // --parity-min-cosine, --no-cuda-graphs
  kAllRunFlags = ~0u,
};

// -c/--ctx-size, -t/--threads, -b/--batch-size, --kv-type, --device, --gpu,
// --no-parity-check, --no-pack, --pack-at-load, --parity-min-cosine, --no-cuda-graphs.
void add_run_flags(CLI::App& app, RunFlags& flags, unsigned which = kAllRunFlags);

// --kv-size: for the apps that run several sequences through the engine,
// which hands the cache's blocks to the running ones.
void add_kv_size_flag(CLI::App& app, RunFlags& flags);

// n_seq sequence slots; the rest from the flags.
model::ForwardOptions forward_options(const RunFlags& flags, uint32_t n_seq = 1);
model::GpuOptions gpu_options(const RunFlags& flags);
model::Device device(const RunFlags& flags);

// --seed, --temp, --top-k, --top-p, --min-p, --repeat-penalty and, unless
// `server_defaults`, --presence-penalty, --frequency-penalty and
// --repeat-last-n. A server's flags are the defaults of what a request leaves
// out, with the API's range of temperatures.
void add_sampling_flags(CLI::App& app, model::SamplerOptions& sampling, bool server_defaults = false);
// One --logit-bias value (ID+BIAS or ID-BIAS); throws CLI::ValidationError.
model::TokenBias parse_logit_bias(const std::string& item);

// --chat-template: a built-in chat family instead of the model's template.
void add_chat_template_flag(CLI::App& app, std::string& family);
// The chat prompt of lamina/model/chat_prompt.h with that family (empty: the
// model's template, ChatML when it has none); an unknown family is an error
// that names the flag.
model::ChatPrompt chat_prompt(const model::Model& model, const std::string& family);

// A library error message with the option fields it names (e.g.
// "ForwardOptions::n_ctx", or "GpuOptions::parity_check = false" for a flag
// that clears one) replaced by the flags that set them.
std::string flag_message(std::string_view library_message);

}  // namespace lamina::apps
