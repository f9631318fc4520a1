// One client connection of lamina-serve, served without a thread of its own:
// its requests are read and answered in order (pipelining included) under
// deadlines for the idle time, the whole header, the whole body and each
// write; work sized by the client runs on the worker threads; a client that
// goes away cancels what it asked for.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/thread_pool.hpp>

#include "http_budget.h"
#include "serve_context.h"

namespace lamina::serve {

// What the connections share.
struct ConnectionHost {
  ServeContext& ctx;
  boost::asio::thread_pool& workers;
  BodyBudget& bodies;
  std::atomic<uint32_t>& answers_unsent;  // queued, not yet written: stop() lets them go out
  std::function<void()> connection_closed;  // called once per connection, from any thread
};

// Serves `socket` (whose executor is a strand) until the connection ends.
void serve_connection(boost::asio::ip::tcp::socket socket, ConnectionHost& host);

}  // namespace lamina::serve
