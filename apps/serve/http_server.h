// The HTTP side of lamina-serve (Boost.Beast on Asio): a few threads serve
// every connection asynchronously, a few workers run the work sized by
// clients, and the connection count, descriptors and body memory are
// bounded and set up before the server says it listens.
#pragma once

#include <memory>
#include <string>

#include "serve_context.h"

namespace lamina::serve {

class HttpServer {
 public:
  explicit HttpServer(ServeContext& ctx);
  ~HttpServer();  // stops the server if stop() was not called
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Raises the open-file limit for --max-connections and binds the listening
  // socket; returns the port (the chosen one for port 0). Throws
  // std::runtime_error when either cannot be done.
  int bind();
  // Starts the threads and accepting, and returns. Throws
  // std::runtime_error when the threads cannot be started.
  void start();
  // The threads, limits and descriptors, for the start-up log.
  std::string describe() const;
  // Refuses new completion requests (503) while those in flight go on;
  // connections close after their current answer.
  void begin_draining();
  // Stops accepting and serving, and joins the threads; connections still
  // open are cut off.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lamina::serve
