// What the routes share: the model and engine, the server's settings and
// its bookkeeping of requests in flight.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "lamina/model/chat_prompt.h"
#include "lamina/model/engine.h"
#include "lamina/model/model.h"
#include "metrics.h"
#include "openai_request.h"
#include "structured_output.h"
#include "text_bound.h"
#include "tool_request.h"

namespace lamina::serve {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                    // 0: any free port
  std::string api_key;                // empty: no authentication
  std::string model_name;             // the model's id in the API
  std::string system_fingerprint;     // the build and backend, repeated in every response
  std::size_t max_body_bytes = 8u << 20;
  int timeout_s = 60;                 // for a whole request body, and for each write to a client
  int header_timeout_s = 10;          // for a whole request header, from its first byte
  int keep_alive_s = 5;               // idle time before a request's first byte
  int http_threads = 2;               // threads serving connections (asynchronous I/O only)
  int http_workers = 2;               // threads for work sized by clients (JSON, templates, tokens)
  uint32_t max_connections = 4096;    // beyond: new connections wait in the kernel's queue
  std::vector<std::string> cors_origins;  // origins browsers may call from ("*": any); empty: CORS off
  RequestDefaults defaults;
  model::Pooling pooling = model::Pooling::Last;  // of /v1/embeddings
};

// Counts requests being served so that shutdown can wait for them.
class InFlight {
 public:
  void enter() {
    std::lock_guard lock(mutex_);
    ++count_;
  }
  void leave() {
    {
      std::lock_guard lock(mutex_);
      --count_;
    }
    idle_.notify_all();
  }
  uint32_t count() const {
    std::lock_guard lock(mutex_);
    return count_;
  }
  // True when none is left before `deadline`.
  bool wait_idle(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock lock(mutex_);
    return idle_.wait_until(lock, deadline, [this] { return count_ == 0; });
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable idle_;
  uint32_t count_ = 0;
};

// Seeds and ids for requests that bring none.
class RandomSource {
 public:
  RandomSource() : bits_(std::random_device{}()) {}
  uint64_t next() {
    std::lock_guard lock(mutex_);
    return bits_();
  }

 private:
  std::mutex mutex_;
  std::mt19937_64 bits_;
};

struct ServeContext {
  ServeContext(const model::Model& m, model::Engine& e, const model::ChatPrompt& c, Metrics& mt, ServerOptions o,
               std::optional<model::ToolCallFormat> tools = std::nullopt)
      : model(m),
        engine(e),
        chat(c),
        metrics(mt),
        options(std::move(o)),
        max_prompt_bytes(max_text_bytes(m.tokenizer(), e.n_ctx())),
        tool_format(tools),
        grammar_vocabulary(m.tokenizer()) {}

  const model::Model& model;
  model::Engine& engine;
  const model::ChatPrompt& chat;
  Metrics& metrics;
  const ServerOptions options;
  // Longer texts cannot fit the context: they are refused untokenized.
  const std::size_t max_prompt_bytes;
  // How the chat template teaches the model to call tools; nullopt: tools are refused.
  const std::optional<model::ToolCallFormat> tool_format;
  GrammarVocabularySource grammar_vocabulary;  // for structured outputs
  const int64_t started = std::chrono::duration_cast<std::chrono::seconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
  RandomSource random;
  InFlight in_flight;
  std::atomic<bool> draining{false};
};

}  // namespace lamina::serve
