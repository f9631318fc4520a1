#include "http_server.h"

#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>

#include "http_connection.h"

namespace lamina::serve {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using ErrorCode = boost::system::error_code;

// Descriptors beyond the connections: the listening socket, the model's
// files, standard streams and what the libraries open.
constexpr rlim_t kSpareDescriptors = 64;
// Request bodies being read or parsed at once hold at most this many times
// --max-body-size.
constexpr std::size_t kBodyBudgetFactor = 32;
// When accept() fails for want of descriptors or memory, it is tried again
// after this long instead of in a busy loop.
constexpr auto kAcceptRetry = std::chrono::milliseconds(100);
// At stop(), answers already queued get this long to reach their clients.
constexpr auto kWriteGrace = std::chrono::seconds(1);

// Raises the soft open-file limit to what `connections` need; returns it.
rlim_t reserve_descriptors(uint32_t connections) {
  const rlim_t need = connections + kSpareDescriptors;
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) throw std::runtime_error("cannot read the open-file limit");
  if (limit.rlim_cur >= need) return limit.rlim_cur;
  if (limit.rlim_max != RLIM_INFINITY && limit.rlim_max < need)
    throw std::runtime_error("--max-connections " + std::to_string(connections) + " needs " + std::to_string(need) +
                             " open files, but the limit is " + std::to_string(limit.rlim_max) +
                             " (ulimit -Hn): lower --max-connections or raise the limit");
  limit.rlim_cur = need;
  if (setrlimit(RLIMIT_NOFILE, &limit) != 0) throw std::runtime_error("cannot raise the open-file limit");
  return need;
}

}  // namespace

struct HttpServer::Impl {
  explicit Impl(ServeContext& c)
      : ctx(c), bodies(c.options.max_body_bytes * kBodyBudgetFactor), io(c.options.http_threads) {}

  void accept() {
    acceptor.async_accept(asio::make_strand(io), [this](ErrorCode ec, tcp::socket socket) {
      if (stopping.load() || ec == asio::error::operation_aborted) return;
      if (ec) {
        retry.expires_after(kAcceptRetry);
        retry.async_wait([this](ErrorCode e) {
          if (!e) accept();
        });
        return;
      }
      ++connections;
      serve_connection(std::move(socket), *host);
      if (connections.load() >= ctx.options.max_connections) {
        // New connections wait in the kernel's queue until one closes; one
        // may have closed already, before it could see the pause.
        paused.store(true);
        if (connections.load() < ctx.options.max_connections && paused.exchange(false)) accept();
        return;
      }
      accept();
    });
  }

  void connection_closed() {
    const uint32_t open = --connections;
    if (open < ctx.options.max_connections && !stopping.load() && paused.load())
      asio::post(accept_strand, [this] {
        if (paused.exchange(false)) accept();
      });
  }

  void run_io() {
    for (;;) {
      try {
        io.run();
        return;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "lamina-serve: error serving HTTP: %s\n", e.what());
      }
    }
  }

  void join() {
    stopping.store(true);
    if (workers) {
      workers->stop();
      workers->join();
      workers.reset();  // drops queued work (and the connections it holds) while the I/O threads run
    }
    work.reset();
    io.stop();
    for (std::thread& t : io_threads) t.join();
    io_threads.clear();
  }

  ServeContext& ctx;
  BodyBudget bodies;
  std::atomic<uint32_t> connections{0};
  std::atomic<uint32_t> answers_unsent{0};
  std::atomic<bool> paused{false};
  std::atomic<bool> stopping{false};
  rlim_t descriptors = 0;
  std::optional<asio::thread_pool> workers;
  std::optional<ConnectionHost> host;
  // Connections left in its queues end as it is destroyed: after the host they use.
  asio::io_context io;
  asio::strand<asio::io_context::executor_type> accept_strand{io.get_executor()};
  tcp::acceptor acceptor{accept_strand};
  asio::steady_timer retry{accept_strand};
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  std::vector<std::thread> io_threads;
};

HttpServer::HttpServer(ServeContext& ctx) : impl_(std::make_unique<Impl>(ctx)) {}

HttpServer::~HttpServer() { stop(); }

int HttpServer::bind() {
  Impl& s = *impl_;
  const ServerOptions& o = s.ctx.options;
  s.descriptors = reserve_descriptors(o.max_connections);
  const std::string where = o.host + ":" + std::to_string(o.port);
  ErrorCode ec;
  tcp::resolver resolver(s.io);
  const auto found = resolver.resolve(o.host, std::to_string(o.port), tcp::resolver::passive, ec);
  if (ec || found.empty()) throw std::runtime_error("cannot listen on " + where + ": " + ec.message());
  const tcp::endpoint endpoint = *found.begin();
  s.acceptor.open(endpoint.protocol(), ec);
  if (!ec) s.acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) s.acceptor.bind(endpoint, ec);
  if (!ec) s.acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    throw std::runtime_error("cannot listen on " + where + " (port in use, or not a local address?): " +
                             ec.message());
  return s.acceptor.local_endpoint().port();
}

void HttpServer::start() {
  Impl& s = *impl_;
  const ServerOptions& o = s.ctx.options;
  try {
    s.workers.emplace(static_cast<std::size_t>(o.http_workers));
    s.host.emplace(ConnectionHost{s.ctx, *s.workers, s.bodies, s.answers_unsent, [&s] { s.connection_closed(); }});
    s.work.emplace(s.io.get_executor());
    for (int i = 0; i < o.http_threads; ++i) s.io_threads.emplace_back([&s] { s.run_io(); });
  } catch (const std::exception& e) {
    s.join();
    throw std::runtime_error(std::string("cannot start the HTTP threads: ") + e.what());
  }
  asio::post(s.accept_strand, [&s] { s.accept(); });
}

std::string HttpServer::describe() const {
  const ServerOptions& o = impl_->ctx.options;
  return "HTTP: " + std::to_string(o.http_threads) + " connection threads, " + std::to_string(o.http_workers) +
         " request workers, up to " + std::to_string(o.max_connections) + " connections (open-file limit " +
         std::to_string(impl_->descriptors) + "), request bodies up to " + std::to_string(o.max_body_bytes) +
         " bytes each and " + std::to_string(o.max_body_bytes * kBodyBudgetFactor) + " together";
}

void HttpServer::begin_draining() { impl_->ctx.draining.store(true); }

void HttpServer::stop() {
  Impl& s = *impl_;
  if (s.stopping.load() && s.io_threads.empty()) return;
  asio::post(s.accept_strand, [&s] {
    ErrorCode ignored;
    s.acceptor.close(ignored);
    s.retry.cancel();
  });
  const auto give_up = std::chrono::steady_clock::now() + kWriteGrace;
  while (s.answers_unsent.load() > 0 && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  s.join();
}

}  // namespace lamina::serve
