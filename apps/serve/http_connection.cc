#include "http_connection.h"

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include "beast_http.h"
#include "http_wire.h"
#include "request_record.h"
#include "router.h"
#include "routes.h"

namespace lamina::serve {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using ErrorCode = beast::error_code;
using std::chrono::seconds;

// Beast reads through this buffer; it also bounds how much of a pipelining
// client's next requests is read ahead while one is being served.
constexpr std::size_t kInputBufferBytes = 64 * 1024;
constexpr std::size_t kReadAhead = 4096;
// While a stream waits (queued, or a long prompt), a comment line every
// second keeps proxies from timing out and finds clients that went away.
constexpr auto kStreamKeepAlive = seconds(1);
// After an answer that ends the connection, what the client still sends is
// read and dropped for a while, so that it sees the answer, not a reset.
constexpr auto kLingerTime = seconds(1);
constexpr std::size_t kLingerBytes = 1 << 20;
// The status logged and counted for a request whose client left before its
// answer began (nginx's "client closed request").
constexpr int kClientClosed = 499;

// One request and its answer.
struct Exchange {
  RequestRecord record;
  std::string method = "-";
  std::string target = "-";
  unsigned version = 11;
  bool keep_alive = false;
  std::string origin;
  HeaderList cors;
  Route route;
  BodyReservation body;
  std::unique_ptr<RunningCompletion> completion;
  int status = 0;                  // once the answer has begun
  bool response_complete = false;  // its last bytes are queued
  UnsentAnswer unsent;             // from then until they are written
  bool sent_since_tick = false;    // a stream sent something since the last keep-alive tick
};

// What a worker hands back: an answer, an error, or a running completion.
struct WorkerResult {
  std::optional<Reply> reply;
  std::optional<ApiError> error;
  std::unique_ptr<RunningCompletion> completion;
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, ConnectionHost& host)
      : host_(host),
        options_(host.ctx.options),
        socket_(std::move(socket)),
        deadline_(socket_.get_executor()),
        tick_(socket_.get_executor()),
        in_(kInputBufferBytes) {}

  ~Connection() { host_.connection_closed(); }

  void start() {
    ErrorCode ec;
    const auto peer = socket_.remote_endpoint(ec);
    if (!ec) {
      remote_addr_ = peer.address().to_string();
      remote_port_ = peer.port();
    }
    socket_.set_option(tcp::no_delay(true), ec);
    asio::dispatch(socket_.get_executor(), [self = shared_from_this()] { self->await_request(); });
  }

 private:
  // Idle: waiting for a request's first byte. Header, Body: Beast reads
  // them. Busy: the request is served (and the socket watched for the client
  // leaving). Closing: the answer is out, the rest is drained.
  enum class Phase { Idle, Header, Body, Busy, Closing, Closed };

  // --- reading requests ---

  void await_request() {
    phase_ = Phase::Idle;
    if (in_.size() > 0) {
      // A pipelined request is already here; a watch read may be pending.
      if (reading_) {
        resume_header_ = true;
        socket_.cancel();
      } else {
        read_header();
      }
      return;
    }
    if (!reading_) in_.shrink_to_fit();  // idle connections hold no buffer
    arm(seconds(options_.keep_alive_s));
    fill();
  }

  // Reads what the client sends next into the buffer (while idle, busy or
  // closing; Beast does the reading of headers and bodies).
  void fill() {
    if (reading_ || phase_ == Phase::Closed) return;
    const std::size_t room = in_.max_size() - in_.size();
    if (room == 0) return;  // a pipelining client's next requests wait in the kernel
    reading_ = true;
    socket_.async_read_some(in_.prepare(std::min(room, kReadAhead)),
                            [self = shared_from_this()](ErrorCode ec, std::size_t n) { self->on_fill(ec, n); });
  }

  void on_fill(ErrorCode ec, std::size_t n) {
    reading_ = false;
    in_.commit(n);
    if (phase_ == Phase::Closed) return;
    if (resume_header_) {
      resume_header_ = false;
      read_header();
      return;
    }
    switch (phase_) {
      case Phase::Idle:
        if (ec) return close();
        if (in_.size() > 0) return read_header();
        return fill();
      case Phase::Busy:
        if (ec) return peer_gone();
        return fill();
      case Phase::Closing:
        linger_bytes_ += n;
        in_.consume(in_.size());
        if (ec || linger_bytes_ > kLingerBytes) return close();
        return fill();
      default:
        return;
    }
  }

  void read_header() {
    phase_ = Phase::Header;
    parser_.emplace();
    parser_->header_limit(kMaxHeaderBytes);
    parser_->body_limit(options_.max_body_bytes);
    arm(seconds(options_.header_timeout_s));
    timed_out_ = false;
    reading_ = true;
    http::async_read_header(socket_, in_, *parser_, [self = shared_from_this()](ErrorCode ec, std::size_t) {
      self->reading_ = false;
      self->on_header(ec);
    });
  }

  void on_header(ErrorCode ec) {
    if (phase_ == Phase::Closed) return;
    if (ec) return fail_read(ec, /*in_header=*/true);
    const auto& req = parser_->get();
    begin_exchange();
    if (auto error = check_framing(req)) return refuse(*error);
    RequestHead head{req.method_string(), req.target(), req[http::field::authorization],
                     req.find(http::field::origin) != req.end()};
    auto routed = route_request(options_, head);
    if (auto* refusal = std::get_if<Refusal>(&routed)) {
      // Without a body to skip, the connection can carry the next request.
      if (parser_->is_done()) return answer_error(refusal->error, std::move(refusal->headers));
      return refuse(refusal->error, std::move(refusal->headers));
    }
    ex_->route = std::move(std::get<Route>(routed));
    if (ex_->route.work == Work::Preflight)
      ex_->cors = cors_headers(options_, ex_->origin, &ex_->route, req[http::field::access_control_request_headers]);
    if (parser_->is_done()) return dispatch();
    // Bodies are read only into memory reserved for them.
    const std::size_t need = parser_->chunked() ? options_.max_body_bytes : parser_->content_length().value_or(0);
    if (!ex_->body.reserve(host_.bodies, need))
      return refuse(ApiError(503, "The server holds as many request bodies as it may; try again shortly.",
                             "server_error", {}, "server_busy"));
    if (req.version() >= 11 && req.find(http::field::expect) != req.end()) {
      out_ += "HTTP/1.1 100 Continue\r\n\r\n";
      flush();
    }
    phase_ = Phase::Body;
    arm(seconds(options_.timeout_s));
    timed_out_ = false;
    reading_ = true;
    http::async_read(socket_, in_, *parser_, [self = shared_from_this()](ErrorCode ec, std::size_t) {
      self->reading_ = false;
      if (self->phase_ == Phase::Closed) return;
      if (ec) return self->fail_read(ec, /*in_header=*/false);
      self->dispatch();
    });
  }

  void fail_read(ErrorCode ec, bool in_header) {
    if (timed_out_) {
      timed_out_ = false;
      return refuse(request_timeout(in_header, in_header ? options_.header_timeout_s : options_.timeout_s));
    }
    if (auto error = parse_failure(ec, in_header, options_.max_body_bytes)) return refuse(*error);
    if (ex_) finish_exchange(kClientClosed);
    close();
  }

  void begin_exchange() {
    ex_.emplace();
    if (parser_ && parser_->is_header_done()) {
      const auto& req = parser_->get();
      ex_->method = std::string(req.method_string());
      ex_->target = std::string(req.target());
      ex_->version = req.version();
      ex_->keep_alive = parser_->keep_alive();
      ex_->origin = std::string(req[http::field::origin]);
      ex_->record.route = route_label(ex_->target);
    }
    ex_->cors = cors_headers(options_, ex_->origin, nullptr, {});
  }

  // --- serving ---

  void dispatch() {
    phase_ = Phase::Busy;
    disarm();
    fill();  // finds a client that leaves while it waits
    Exchange& x = *ex_;
    ServeContext& ctx = host_.ctx;
    try {
      switch (x.route.work) {
        case Work::Health: return answer(handle_health(ctx));
        case Work::Models: return answer(handle_models(ctx));
        case Work::Model: return answer(handle_model(ctx, x.route.model_id));
        case Work::Metrics: return answer(handle_metrics(ctx));
        case Work::Preflight: {
          Reply r;
          r.status = 204;
          r.headers.emplace_back("Allow", x.route.allow + ", OPTIONS");
          return answer(std::move(r));
        }
        default: return run_on_worker();
      }
    } catch (const ApiError& e) {
      answer_error(e);
    } catch (const std::exception& e) {
      answer_error(ApiError(500, std::string("Internal error: ") + e.what(), "server_error"));
    }
  }

  void run_on_worker() {
    job_running_ = true;
    std::string body = std::move(parser_->get().body());
    parser_.reset();
    asio::post(host_.workers, [self = shared_from_this(), body = std::move(body)]() mutable {
      WorkerResult result = self->work(body);
      body = std::string();  // freed before the answer is written
      const auto executor = self->socket_.get_executor();
      asio::post(executor, [self = std::move(self), result = std::move(result)]() mutable {
        self->on_worker_done(std::move(result));
      });
    });
  }

  // On a worker thread. The connection's strand leaves the exchange alone
  // until on_worker_done().
  WorkerResult work(const std::string& body) {
    WorkerResult r;
    if (gone_.load()) return r;  // the client left while the request waited
    Exchange& x = *ex_;
    ServeContext& ctx = host_.ctx;
    try {
      switch (x.route.work) {
        case Work::Tokenize: r.reply = handle_tokenize(ctx, body); break;
        case Work::Detokenize: r.reply = handle_detokenize(ctx, body); break;
        case Work::Embeddings: r.reply = handle_embeddings(ctx, body); break;
        case Work::ChatCompletions:
        case Work::Completions: {
          const Endpoint endpoint =
              x.route.work == Work::ChatCompletions ? Endpoint::ChatCompletions : Endpoint::Completions;
          r.completion = RunningCompletion::start(ctx, endpoint, body, x.record, notifier());
          break;
        }
        default: r.error = ApiError(500, "Internal error: no worker route", "server_error");
      }
    } catch (const ApiError& e) {
      r.error = e;
    } catch (const std::exception& e) {
      r.error = ApiError(500, std::string("Internal error: ") + e.what(), "server_error");
    }
    return r;
  }

  // Rung on the engine thread: brings the connection to its completion.
  std::function<void()> notifier() {
    return [weak = weak_from_this()] {
      if (auto self = weak.lock()) {
        // Moved into the handler: the engine thread keeps no reference that
        // could make it the one to destroy the connection.
        const auto executor = self->socket_.get_executor();
        asio::post(executor, [self = std::move(self)] { self->on_completion_update(); });
      }
    };
  }

  void on_worker_done(WorkerResult r) {
    job_running_ = false;
    ex_->body.release();
    if (gone_.load()) {
      r.completion.reset();  // cancels it
      finish_exchange(kClientClosed);
      ex_.reset();
      return close();
    }
    if (r.error) return answer_error(*r.error);
    if (r.reply) return answer(std::move(*r.reply));
    ex_->completion = std::move(r.completion);
    if (ex_->completion->streamed()) return start_stream();
    on_completion_update();
  }

  void start_stream() {
    Exchange& x = *ex_;
    x.status = 200;
    if (x.version < 11) x.keep_alive = false;
    out_ += format_stream_head(x.version, x.cors);
    arm_tick();
    on_completion_update();
  }

  void on_completion_update() {
    if (phase_ == Phase::Closed || !ex_ || !ex_->completion || ex_->response_complete) return;
    Exchange& x = *ex_;
    RunningCompletion& c = *x.completion;
    if (!c.streamed()) {
      if (auto reply = c.reply()) answer(std::move(*reply));
      return;
    }
    bool ended = false;
    const std::string events = c.events(ended);
    if (!events.empty()) {
      out_ += stream_chunk(events, x.version);
      x.sent_since_tick = true;
    }
    if (ended) {
      out_ += stream_end(x.version);
      tick_.cancel();
      complete_response();
    }
    flush();
  }

  void arm_tick() {
    tick_.expires_after(kStreamKeepAlive);
    tick_.async_wait([self = shared_from_this()](ErrorCode ec) {
      if (!ec) self->on_tick();
    });
  }

  void on_tick() {
    if (phase_ == Phase::Closed || !ex_ || ex_->response_complete) return;
    if (!ex_->sent_since_tick) {
      out_ += stream_chunk(kSseKeepAlive, ex_->version);
      flush();
    }
    ex_->sent_since_tick = false;
    arm_tick();
  }

  // --- answering ---

  void answer(Reply reply) {
    phase_ = Phase::Busy;
    Exchange& x = *ex_;
    x.status = reply.status;
    x.keep_alive = x.keep_alive && !host_.ctx.draining.load();
    out_ += format_reply(std::move(reply), x.version, x.keep_alive, x.route.head, x.cors);
    complete_response();
    flush();
  }

  // The answer's last bytes are queued: the exchange is counted, logged and
  // out of flight before the client can have them (and ask /metrics); the
  // connection goes on once they are written. (Shutdown waits for writes.)
  void complete_response() {
    Exchange& x = *ex_;
    x.response_complete = true;
    x.unsent.hold(host_.answers_unsent);
    x.completion.reset();
    x.body.release();
    finish_exchange(x.status);
  }

  void answer_error(const ApiError& error, HeaderList headers = {}) {
    ex_->record.error = error;
    Reply r = error_reply(error);
    for (auto& h : headers) r.headers.push_back(std::move(h));
    answer(std::move(r));
  }

  // An answer that ends the connection: the request was not (wholly) read.
  void refuse(const ApiError& error, HeaderList headers = {}) {
    if (!ex_) begin_exchange();
    ex_->keep_alive = false;
    answer_error(error, std::move(headers));
  }

  void flush() {
    if (writing_ || out_.empty() || phase_ == Phase::Closed) return;
    writing_ = true;
    sending_.swap(out_);
    out_.clear();
    // A client must keep reading: one timer watches every write of the
    // answer (re-arming it per write would cost two timer operations a token).
    write_started_ = std::chrono::steady_clock::now();
    if (phase_ == Phase::Busy && !watching_writes_) {
      arm(seconds(options_.timeout_s));
      watching_writes_ = true;
    }
    asio::async_write(socket_, asio::buffer(sending_),
                      [self = shared_from_this()](ErrorCode ec, std::size_t) { self->on_written(ec); });
  }

  void on_written(ErrorCode ec) {
    writing_ = false;
    sending_.clear();
    if (phase_ == Phase::Closed) return;
    if (ec) {
      if (phase_ == Phase::Busy) peer_gone();
      return;  // while a request is read, its read fails as well
    }
    if (!out_.empty()) return flush();
    if (phase_ == Phase::Busy && ex_ && ex_->response_complete) on_response_sent();
  }

  void on_response_sent() {
    const bool keep_alive = ex_->keep_alive;
    ex_.reset();
    if (keep_alive) return await_request();
    linger();
  }

  // --- ending ---

  void peer_gone() {
    if (gone_.exchange(true)) return;
    if (job_running_) return close();  // on_worker_done() ends the exchange
    if (ex_ && !ex_->response_complete) {
      if (ex_->completion && !ex_->completion->ended()) {
        ex_->completion->cancel();
        ex_->record.finish = "disconnected";
      }
      finish_exchange(ex_->status ? ex_->status : kClientClosed);
    }
    ex_.reset();
    close();
  }

  void linger() {
    phase_ = Phase::Closing;
    ErrorCode ignored;
    socket_.shutdown(tcp::socket::shutdown_send, ignored);
    arm(kLingerTime);
    linger_bytes_ = 0;
    if (!reading_) in_.consume(in_.size());
    fill();
  }

  void close() {
    if (phase_ == Phase::Closed) return;
    phase_ = Phase::Closed;
    disarm();
    tick_.cancel();
    ErrorCode ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
  }

  void arm(std::chrono::steady_clock::duration timeout) {
    watching_writes_ = false;
    const uint64_t generation = ++deadline_generation_;
    deadline_.expires_after(timeout);
    deadline_.async_wait([self = shared_from_this(), generation](ErrorCode ec) {
      if (!ec && generation == self->deadline_generation_) self->on_deadline();
    });
  }

  void disarm() {
    watching_writes_ = false;
    ++deadline_generation_;
    deadline_.cancel();
  }

  void on_deadline() {
    switch (phase_) {
      case Phase::Idle:
      case Phase::Closing: return close();
      case Phase::Header:
      case Phase::Body:
        // Beast's read ends with operation_aborted and answers 408.
        timed_out_ = true;
        socket_.cancel();
        return;
      case Phase::Busy: return check_write_progress();
      case Phase::Closed: return;
    }
  }

  // The deadline of a busy connection: gone when a write has waited for the
  // client longer than --timeout, else watched again from that write's start.
  void check_write_progress() {
    if (!writing_) {
      watching_writes_ = false;  // the next write arms the watch again
      return;
    }
    const auto due = write_started_ + seconds(options_.timeout_s);
    if (std::chrono::steady_clock::now() >= due) return peer_gone();
    arm(due - std::chrono::steady_clock::now());
    watching_writes_ = true;
  }

  void finish_exchange(int status) {
    Exchange& x = *ex_;
    host_.ctx.metrics.count_http(x.record.route, status);
    LogLineInput in;
    in.method = x.method;
    in.path = x.target;
    in.remote_addr = remote_addr_;
    in.remote_port = remote_port_;
    in.status = status;
    in.duration_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - x.record.start).count();
    const std::string line = format_log_line(in, x.record, std::chrono::system_clock::now());
    std::fwrite(line.data(), 1, line.size(), stderr);
  }

  ConnectionHost& host_;
  const ServerOptions& options_;
  tcp::socket socket_;
  asio::steady_timer deadline_;
  asio::steady_timer tick_;
  beast::flat_buffer in_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::optional<Exchange> ex_;
  Phase phase_ = Phase::Idle;
  bool reading_ = false;        // a read of the socket is in flight
  bool writing_ = false;        // a write is in flight (sending_)
  bool resume_header_ = false;  // a watch read was cancelled to parse a pipelined request
  bool timed_out_ = false;      // the header or body deadline passed
  bool job_running_ = false;    // a worker has the exchange
  std::atomic<bool> gone_{false};
  uint64_t deadline_generation_ = 0;
  bool watching_writes_ = false;  // the deadline watches writes (Busy)
  std::chrono::steady_clock::time_point write_started_;
  std::string out_;      // to send after the write in flight
  std::string sending_;  // being written
  std::size_t linger_bytes_ = 0;
  std::string remote_addr_ = "-";
  int remote_port_ = 0;
};

}  // namespace

void serve_connection(tcp::socket socket, ConnectionHost& host) {
  std::make_shared<Connection>(std::move(socket), host)->start();
}

}  // namespace lamina::serve
