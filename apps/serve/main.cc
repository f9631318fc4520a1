// lamina-serve: an OpenAI-compatible HTTP server over the serving engine.
#include <malloc.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>

#include "default_model.h"
#include "run_flags.h"
#include "serve_app.h"

namespace apps = lamina::apps;

int main(int argc, char** argv) {
  CLI::App app{"lamina-serve: an OpenAI-compatible server (default model: the bundled stories260K)", "lamina-serve"};
  app.set_version_flag("--version", std::string("lamina-serve ") + LAMINA_VERSION);
  lamina::serve::AppOptions o;
  auto& srv = o.server;
  auto& s = srv.defaults.sampling;
  app.add_option("-m,--model", o.model_path, "GGUF model file or Hugging Face model folder (default: bundled stories260K.gguf)");
  app.add_option("-a,--alias", o.alias, "the model's id in the API (default: the file name without .gguf)");
  app.add_option("--host", srv.host, "address to listen on")->capture_default_str();
  app.add_option("--port", srv.port, "port to listen on (0: any free port)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  apps::add_run_flags(app, o.run);
  apps::add_kv_size_flag(app, o.run);
  app.add_option("--parallel", o.n_parallel, "sequence slots: requests generating at once")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  app.add_option("--max-queue", o.max_queue, "requests waiting for a slot before new ones get 429")
      ->check(CLI::Range(0, 1 << 20))
      ->capture_default_str();
  app.add_flag("!--no-prefix-cache", o.prefix_cache, "recompute every prompt instead of reusing cached KV blocks");
  apps::add_chat_template_flag(app, o.chat_template);
  app.add_option("--pooling", o.pooling,
                 "how /v1/embeddings pools a text's hidden states (default: the model's pooling_type, else last)")
      ->check(CLI::IsMember({"last", "mean", "first"}));
  auto* key = app.add_option("--api-key", srv.api_key, "require 'Authorization: Bearer <key>' (not for /health)");
  app.add_option("--api-key-file", o.api_key_file, "read the API key from a file (keeps it out of the process list)")
      ->check(CLI::ExistingFile)
      ->excludes(key);
  app.add_option("--timeout", srv.timeout_s, "seconds for a whole request body, and for each write to a client")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  app.add_option("--header-timeout", srv.header_timeout_s, "seconds for a whole request header, from its first byte")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  app.add_option("--keep-alive-timeout", srv.keep_alive_s,
                 "seconds a connection may wait for its next request (capped by --timeout)")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  app.add_option("--max-body-size", srv.max_body_bytes, "largest request body in bytes (larger: 413)")
      ->check(CLI::Range(1024, 1 << 30))
      ->capture_default_str();
  app.add_option("--max-tokens", srv.defaults.max_tokens_cap,
                 "largest max_tokens a request may ask for, and the default of chat requests (0: the context)")
      ->check(CLI::Range(0, 1 << 24));
  app.add_option("--http-threads", srv.http_threads, "threads serving the connections (asynchronous I/O only)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--http-workers", srv.http_workers,
                 "threads for work sized by clients: JSON bodies, chat templates, tokenization")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--max-connections", srv.max_connections,
                 "open connections at most (beyond: they wait in the kernel's queue)")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--cors-origin", srv.cors_origins,
                 "let browser pages from this origin call the server (repeatable; '*': any origin)");
  app.add_option("--shutdown-timeout", o.shutdown_timeout_s,
                 "seconds requests in flight may run on after SIGINT/SIGTERM before they are cancelled")
      ->check(CLI::Range(0, 3600))
      ->capture_default_str();
  // Server-side sampling defaults for fields a request leaves out (OpenAI's otherwise).
  apps::add_sampling_flags(app, s, /*server_defaults=*/true);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  srv.keep_alive_s = std::min(srv.keep_alive_s, srv.timeout_s);
  // A client that vanishes must fail a write, not kill the process.
  signal(SIGPIPE, SIG_IGN);
  // Request bodies and their copies (megabytes) are mapped and unmapped on
  // their own: glibc's adaptive threshold would otherwise move them onto the
  // heap after the first one, where what a burst of large requests leaves
  // stays resident.
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  try {
    if (o.model_path.empty()) o.model_path = apps::default_model_path();
    return lamina::serve::run_server(std::move(o));
  } catch (const std::exception& e) {
    std::cerr << "lamina-serve: " << apps::flag_message(e.what()) << '\n';
    return 1;
  }
}
