// The HTTP side of lamina-serve (cpp-httplib): routes, authentication,
// limits, error bodies, metrics and the request log.
#pragma once

#include <chrono>
#include <memory>

#include "serve_context.h"

namespace lamina::serve {

class HttpServer {
 public:
  explicit HttpServer(ServeContext& ctx);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds the listening socket; returns the port (the chosen one for port 0).
  // Throws std::runtime_error when the address cannot be bound.
  int bind();
  // Accepts and serves connections until stop(); blocks.
  void serve();
  // Refuses new completion requests (503) while those in flight go on.
  void begin_draining();
  // Closes the listening socket, ends idle connections and waits for the
  // workers; whatever is still being served is cut off.
  void stop();

 private:
  class Listener;
  ServeContext& ctx_;
  std::unique_ptr<Listener> listener_;
};

}  // namespace lamina::serve
