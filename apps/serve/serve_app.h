// lamina-serve once its flags are parsed: load, serve, shut down on a signal.
#pragma once

#include <cstdint>
#include <string>

#include "lamina/model/sampler.h"
#include "run_flags.h"
#include "serve_context.h"

namespace lamina::serve {

struct AppOptions {
  std::string model_path;
  std::string alias;           // the model's id in the API; default: the file name without .gguf
  apps::RunFlags run;          // n_ctx per sequence slot; batch_size: tokens per forward step
  uint32_t n_parallel = 4;     // sequence slots
  bool prefix_cache = true;
  uint32_t max_queue = 256;
  std::string chat_template;   // a built-in family instead of the model's template
  std::string api_key_file;
  std::string pooling;         // of embeddings: "last", "mean" or "first"; empty: the GGUF's, else last
  int shutdown_timeout_s = 10; // how long in-flight requests may finish after SIGINT/SIGTERM
  ServerOptions server;
};

// Returns the exit code (0 after a clean shutdown); throws on startup errors.
int run_server(AppOptions options);

}  // namespace lamina::serve
