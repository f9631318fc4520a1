// lamina-serve once its flags are parsed: load, serve, shut down on a signal.
#pragma once

#include <cstdint>
#include <string>

#include "lamina/model/sampler.h"
#include "serve_context.h"

namespace lamina::serve {

struct AppOptions {
  std::string model_path;
  std::string alias;           // the model's id in the API; default: the file name without .gguf
  uint32_t n_ctx = 0;          // per sequence slot; 0: the model's, at most 4096
  uint32_t n_parallel = 4;     // sequence slots
  int n_threads = 0;           // 0: all
  uint32_t batch_size = 512;   // tokens per forward step
  std::string kv_type = "f16";
  std::string device = "cpu";  // cpu, cuda or auto
  int gpu_index = 0;
  std::string backend_dir;  // folder of the CUDA backend module; empty: the installed one
  bool parity_check = true;
  bool pack_weights = true;  // CPU: rearrange weights for the faster kernels
  bool prefix_cache = true;
  uint32_t max_queue = 256;
  std::string chat_template;   // a built-in family instead of the model's template
  std::string api_key_file;
  int shutdown_timeout_s = 10; // how long in-flight requests may finish after SIGINT/SIGTERM
  ServerOptions server;
};

// Returns the exit code (0 after a clean shutdown); throws on startup errors.
int run_server(AppOptions options);

}  // namespace lamina::serve
