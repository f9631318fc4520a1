#include "serve_app.h"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <stdexcept>
#include <thread>

#include "http_server.h"
#include "lamina/model/engine.h"
#include "lamina/model/gpu_forward.h"
#include "lamina/model/model.h"
#include "metrics.h"

namespace lamina::serve {
namespace {

using Clock = std::chrono::steady_clock;

// After SIGINT/SIGTERM and the grace period, cancelled streams get this long
// to send their last event before the connections are closed.
constexpr auto kCancelGrace = std::chrono::seconds(1);

std::string read_api_key(const std::string& path) {
  std::ifstream in(path);
  std::string key;
  if (!in || !std::getline(in, key)) throw std::runtime_error(path + ": cannot read the API key");
  while (!key.empty() && (key.back() == '\r' || key.back() == ' ')) key.pop_back();
  if (key.empty()) throw std::runtime_error(path + ": the API key is empty");
  return key;
}

sigset_t shutdown_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

int wait_for_signal(const sigset_t& set) {
  int sig = 0;
  while (sigwait(&set, &sig) != 0) {
  }
  return sig;
}

std::string model_file_stem(const std::string& path) { return std::filesystem::path(path).stem().string(); }

}  // namespace

int run_server(AppOptions o) {
  const auto model = model::Model::load(o.model_path);
  if (o.alias.empty()) o.alias = model_file_stem(o.model_path);
  if (!o.api_key_file.empty()) o.server.api_key = read_api_key(o.api_key_file);

  // Every thread started from here on (engine, compute pool, HTTP threads)
  // inherits the blocked set, so the signals reach only sigwait() below.
  const sigset_t signals = shutdown_signals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  std::string device_note;
  const auto forward = model::make_forward(*model, apps::forward_options(o.run, o.n_parallel), apps::device(o.run),
                                           apps::gpu_options(o.run), &device_note);
  if (!device_note.empty()) std::fprintf(stderr, "lamina-serve: %s\n", device_note.c_str());

  model::EngineOptions eo;
  eo.max_queue = o.max_queue;
  eo.max_step_tokens = o.run.batch_size;
  eo.prefill_chunk = std::min<uint32_t>(eo.prefill_chunk, o.run.batch_size);
  eo.prefix_cache = o.prefix_cache;
  model::Engine engine(*model, *forward, eo);

  const model::ChatPrompt chat = apps::chat_prompt(*model, o.chat_template);
  Metrics metrics;
  ServerOptions so = o.server;
  so.model_name = o.alias;
  if (!o.pooling.empty())
    so.pooling = model::pooling_by_name(o.pooling).value();
  else
    so.pooling = model::pooling_of(*model).value_or(model::Pooling::Last);
  const bool on_gpu = forward->backend_name().starts_with("CUDA");
  so.system_fingerprint = std::string("lamina-") + LAMINA_VERSION + (on_gpu ? "-cuda" : "-cpu");
  const auto tool_format = o.chat_template.empty() ? tool_call_format_of(*model, chat) : std::nullopt;
  ServeContext ctx(*model, engine, chat, metrics, so, tool_format);

  // Everything that can fail is set up before the server says it listens,
  // the thread that takes the signals included: the first starts the
  // shutdown, a second ends the process at once.
  std::promise<int> first_signal;
  std::future<int> shutdown_signal = first_signal.get_future();
  std::thread([signals, first = std::move(first_signal)]() mutable {
    first.set_value(wait_for_signal(signals));
    wait_for_signal(signals);
    std::fprintf(stderr, "lamina-serve: second signal: exiting now\n");
    std::_Exit(1);
  }).detach();
  HttpServer server(ctx);
  const int port = server.bind();
  server.start();
  std::fprintf(stderr,
               "lamina-serve: model %s (%s), %s, context %u tokens x %u slots, queue %u, chat format %s, tool calls %s\n"
               "lamina-serve: %s\n"
               "lamina-serve: listening on http://%s:%d\n",
               so.model_name.c_str(), o.model_path.c_str(), forward->backend_name().c_str(), engine.n_ctx(),
               o.n_parallel, o.max_queue, chat.description().c_str(),
               tool_format ? std::string(model::tool_call_format_name(*tool_format)).c_str() : "none",
               server.describe().c_str(), so.host.c_str(),
               port);
  std::fflush(stderr);

  const int sig = shutdown_signal.get();
  std::fprintf(stderr, "lamina-serve: %s: finishing %u requests in flight (up to %d s)\n",
               sig == SIGINT ? "SIGINT" : "SIGTERM", ctx.in_flight.count(), o.shutdown_timeout_s);

  server.begin_draining();
  if (!ctx.in_flight.wait_idle(Clock::now() + std::chrono::seconds(o.shutdown_timeout_s))) {
    std::fprintf(stderr, "lamina-serve: cancelling %u requests still running\n", ctx.in_flight.count());
    engine.shutdown(/*finish_running=*/false);
    // Cancelled streams send their last event; clients that stopped reading are left.
    ctx.in_flight.wait_idle(Clock::now() + kCancelGrace);
  }
  // No engine callback may reach the connections once they are gone.
  engine.shutdown(/*finish_running=*/false);
  server.stop();
  std::fprintf(stderr, "lamina-serve: stopped\n");
  return 0;
}

}  // namespace lamina::serve
