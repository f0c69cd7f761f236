#include "remote_effect/service.hpp"

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <iostream>
#include <thread>

#include <httplib.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>
#include <skewbench/build_info.hpp>

#include "common/host.hpp"

namespace skewbench::remote_effect {
namespace {

constexpr const char* kJson = "application/json";

void reply(httplib::Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  res.set_content(body.dump(), kJson);
}

void reply(httplib::Response& res, const RequestError& error) { reply(res, error.http_status, error.to_json()); }

// The body for a response cpp-httplib produced itself (no route, oversized
// body, malformed request line, ...), so that every response is JSON.
nlohmann::json error_body_for_status(int status) {
  switch (status) {
    case 400:
      return {{"error", "bad_request"}};
    case 404:
      return {{"error", "not_found"}};
    case 408:
      return {{"error", "request_timeout"}};
    case 413:
      return {{"error", "payload_too_large"}, {"limit_bytes", kMaxBodyBytes}};
    case 414:
      return {{"error", "uri_too_long"}};
    case 416:
      return {{"error", "range_not_satisfiable"}};
    case 431:
      return {{"error", "request_header_fields_too_large"}};
    case 500:
      return {{"error", "internal_error"}};
    default:
      return {{"error", "http_" + std::to_string(status)}};
  }
}

// The status of a request whose head or body could not be read in full.
int status_for(ReadFailure failure, int status) {
  switch (failure) {
    case ReadFailure::head_timeout:
    case ReadFailure::body_timeout:
      return 408;
    case ReadFailure::head_too_large:
      return 431;
    case ReadFailure::body_too_large:
      return 413;
    case ReadFailure::none:
      break;
  }
  return status;
}

// Answers with an error and closes the connection: after a body that was not
// read to its end, or a head that could not be parsed, the next byte on the
// connection is not known to start a request.
void reply_and_close(httplib::Response& res, int status) {
  ConnectionServer::close_after_response();
  res.set_header("Connection", "close");
  reply(res, status, error_body_for_status(status));
}

std::optional<std::uint64_t> parse_content_length(const std::string& text) {
  const auto value = parse_int64(text);
  if (!value || *value < 0) return std::nullopt;
  return static_cast<std::uint64_t>(*value);
}

Headers copy_headers(const httplib::Headers& headers) { return Headers(headers.begin(), headers.end()); }

}  // namespace

std::string new_boot_id() {
  std::array<unsigned char, 16> bytes{};
  std::size_t filled = 0;
  while (filled < bytes.size()) {
    const ssize_t n = ::getrandom(bytes.data() + filled, bytes.size() - filled, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(std::string("getrandom failed: ") + std::strerror(errno));
    }
    filled += static_cast<std::size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (const unsigned char byte : bytes) {
    hex.push_back(kHex[byte >> 4]);
    hex.push_back(kHex[byte & 0x0f]);
  }
  return hex;
}

Service::Service(ServiceOptions options)
    : options_(std::move(options)),
      state_db_absolute_(std::filesystem::absolute(options_.state_db)),
      boot_id_(new_boot_id()),
      store_(std::make_unique<Store>(options_.state_db, options_.sync, options_.dedupe)),
      committer_(std::make_unique<GroupCommitter>(
          [store = store_.get()](std::span<PendingPost* const> group) { store->post_group(group); },
          options_.max_group_posts)),
      server_(std::make_unique<ConnectionServer>(options_.connections)) {
  install_error_handlers();
  install_routes();
}

Service::~Service() = default;

void Service::install_error_handlers() {
  auto& server = *server_;
  server.set_tcp_nodelay(true);
  // SO_REUSEADDR lets a restarted service bind its old port at once; unlike
  // cpp-httplib's default SO_REUSEPORT it does not let two live processes
  // share a port, so a port in use is reported rather than silently shared.
  server.set_socket_options([this](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    listen_fd_ = sock;  // the last socket created is the one that gets bound
  });
  server.set_write_timeout(10, 0);
  server.set_payload_max_length(kMaxBodyBytes);
  server.set_head_timeout_body(error_body_for_status(408).dump());

  // Responses cpp-httplib produced itself (no route, unparseable head, body
  // not readable) get a JSON body; all but 404 close the connection.
  server.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request&, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    res.status = status_for(ConnectionServer::current_read_failure(), res.status);
    if (res.status == 404) {
      res.set_content(error_body_for_status(res.status).dump(), kJson);
    } else {
      reply_and_close(res, res.status);
    }
    return httplib::Server::HandlerResponse::Handled;
  }));
  server.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr error) {
    std::string detail = "unknown exception";
    try {
      if (error) std::rethrow_exception(error);
    } catch (const std::exception& e) {
      detail = e.what();
    } catch (...) {
    }
    std::cerr << "remote-effect: request failed: " << detail << std::endl;
    res.headers.clear();
    reply(res, 500, {{"error", "internal_error"}, {"detail", detail}});
  });
}

void Service::install_routes() {
  auto& server = *server_;
  server.Get("/health", [this](const httplib::Request&, httplib::Response& res) { reply(res, 200, health()); });

  server.Get(R"(/status/(.*))", [this](const httplib::Request& req, httplib::Response& res) {
    const auto as_read = request_as_read(req);
    auto parsed = parse_status_request(req.matches[1].str(), as_read.headers, as_read.request_head);
    if (const auto* error = std::get_if<RequestError>(&parsed)) return reply(res, *error);
    const auto& request = std::get<StatusRequest>(parsed);
    reply(res, 200,
          snapshot_json(request.operation_id, request.evaluation_time_s, store_->read(request.operation_id), boot_id_,
                        options_.dedupe));
  });

  server.Post("/effects", [this](const httplib::Request& req, httplib::Response& res,
                                 const httplib::ContentReader& reader) { handle_post_with_reader(req, res, reader); });
  server.Post(R"(/maintenance/gc/(.*))",
              [this](const httplib::Request& req, httplib::Response& res) { handle_gc(req, res); });

  // Before cpp-httplib reads a body: a declared length over the limit is
  // refused without reading it; a POST, PUT, PATCH or DELETE with neither
  // Content-Length nor Transfer-Encoding has an empty body (cpp-httplib would
  // otherwise read until end-of-stream), so it is answered here.
  server.set_pre_routing_handler(
      httplib::Server::HandlerWithResponse([this](const httplib::Request& req, httplib::Response& res) {
        if (has_obsolete_line_folding(ConnectionServer::current_request_head())) {
          // RFC 9112 section 5.2: reject rather than guess what the folded line meant.
          ConnectionServer::close_after_response();
          res.set_header("Connection", "close");
          reply(res, 400,
                {{"error", "obsolete_line_folding"},
                 {"detail", "a header line starts with a space or tab (obs-fold, RFC 9112 section 5.2)"}});
          return httplib::Server::HandlerResponse::Handled;
        }
        const bool may_have_body = req.method == "POST" || req.method == "PUT" || req.method == "PATCH" ||
                                   req.method == "DELETE" || req.method == "PRI";
        if (!may_have_body) return httplib::Server::HandlerResponse::Unhandled;
        if (req.has_header("Content-Length")) {
          const auto length = parse_content_length(req.get_header_value("Content-Length"));
          if (!length || req.get_header_value_count("Content-Length") > 1) {
            reply_and_close(res, 400);
          } else if (*length > kMaxBodyBytes) {
            reply_and_close(res, 413);
          } else {
            return httplib::Server::HandlerResponse::Unhandled;
          }
          return httplib::Server::HandlerResponse::Handled;
        }
        if (req.has_header("Transfer-Encoding")) return httplib::Server::HandlerResponse::Unhandled;
        if (req.method == "POST" && req.path == "/effects") {
          handle_post(req, res, {});
        } else if (req.method == "POST" && req.path.rfind("/maintenance/gc/", 0) == 0) {
          handle_gc(req, res);
        } else {
          reply(res, 404, error_body_for_status(404));
        }
        return httplib::Server::HandlerResponse::Handled;
      }));
}

void Service::handle_post_with_reader(const httplib::Request& req, httplib::Response& res,
                                      const httplib::ContentReader& reader) {
  // The body is read in pieces and refused as soon as it passes the limit,
  // whatever its framing (Content-Length, chunked, compressed).
  std::string body;
  bool too_large = false;
  const bool complete = reader([&](const char* data, std::size_t length) {
    if (body.size() + length > kMaxBodyBytes) {
      too_large = true;
      return false;
    }
    body.append(data, length);
    return true;
  });
  if (!complete) {
    const int status = too_large ? 413 : status_for(ConnectionServer::current_read_failure(), 400);
    return reply_and_close(res, status);
  }
  handle_post(req, res, body);
}

void Service::handle_post(const httplib::Request& req, httplib::Response& res, std::string_view body) {
  const auto as_read = request_as_read(req);
  auto parsed = parse_post_request(as_read.headers, body, options_.default_ttl_s, as_read.request_head);
  if (const auto* error = std::get_if<RequestError>(&parsed)) return reply(res, *error);
  const auto& request = std::get<PostRequest>(parsed);

  // The response is built inside the transaction: when it cannot be built,
  // nothing of this POST is committed. submit() returns only after the COMMIT
  // of the group that holds this POST (the callback may run on another
  // connection's thread meanwhile; this thread waits, so its locals live).
  std::string response_body;
  const auto build_response = [&](const PostResult& committed) {
    if (request.drop_ack) return;
    response_body = post_json(request, committed.delivery, committed.state, boot_id_, options_.dedupe).dump();
  };
  PendingPost pending{.request = &request, .before_commit = build_response, .result = std::nullopt, .error = nullptr};
  committer_->submit(pending);
  if (pending.error) std::rethrow_exception(pending.error);
  const auto& result = *pending.result;
  if (result.delivery == Delivery::fenced_out) {
    return reply(res, 409, fenced_out_json(*request.fence_epoch, result.state.temporal_epoch));
  }
  if (is_refusal(result.delivery)) return reply(res, refusal_error(result.delivery));
  if (request.drop_ack) {
    // The effect and its ack_drops count are committed; now vanish.
    ConnectionServer::drop_current_connection();
    return;
  }
  res.status = 200;
  res.set_content(response_body, kJson);
}

void Service::handle_gc(const httplib::Request& req, httplib::Response& res) {
  const std::string prefix = "/maintenance/gc/";
  const std::string operation_id = req.matches.size() > 1 ? req.matches[1].str() : req.path.substr(prefix.size());
  const auto as_read = request_as_read(req);
  auto parsed = parse_gc_request(operation_id, as_read.headers, as_read.request_head);
  if (const auto* error = std::get_if<RequestError>(&parsed)) return reply(res, *error);
  const auto& request = std::get<GcRequest>(parsed);
  reply(res, 200, gc_json(request, store_->gc(request)));
}

std::int64_t Service::read_wall_clock_s() const {
  if (options_.wall_clock_s) return options_.wall_clock_s();
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<std::int64_t>(now.tv_sec);
}

OwnClockRequest Service::request_as_read(const httplib::Request& req) const {
  if (options_.clock == ClockSource::logical) {
    return {copy_headers(req.headers), std::string(ConnectionServer::current_request_head())};
  }
  return on_own_clock(copy_headers(req.headers), ConnectionServer::current_request_head(), read_wall_clock_s());
}

int Service::bind() {
  errno = 0;
  int port = options_.port;
  bool bound = false;
  if (port == 0) {
    port = server_->bind_to_any_port(options_.host);
    bound = port > 0;
  } else {
    bound = server_->bind_to_port(options_.host, port);
  }
  if (!bound) {
    const int error = errno;
    throw BindError("cannot bind " + options_.host + ":" + std::to_string(options_.port) +
                    (error != 0 ? std::string(": ") + std::strerror(error) : std::string()));
  }
  // cpp-httplib listens with a backlog of 5, so a burst of simultaneous
  // connects overflows the accept queue and waits a second for a SYN
  // retransmit. Listening again on the same socket raises the backlog.
  ::listen(listen_fd_, SOMAXCONN);
  bound_port_ = port;
  return port;
}

nlohmann::ordered_json Service::ready_line() const {
  return {{"service", "remote-effect"},
          {"boot_id", boot_id_},
          {"port", bound_port_},
          {"host", options_.host},
          {"state_db", state_db_absolute_.string()},
          {"sync", sync_mode_name(options_.sync)},
          {"idempotency_mode", dedupe_mode_name(options_.dedupe)},
          {"clock", clock_source_name(options_.clock)}};
}

nlohmann::json Service::health() const {
  const auto totals = store_->totals();
  const auto groups = committer_->stats();
  return {{"status", "ok"},
          {"service", "remote-effect"},
          {"boot_id", boot_id_},
          {"hostname", host_name()},
          {"pid", ::getpid()},
          {"state_db", state_db_absolute_.string()},
          {"default_ttl_seconds", options_.default_ttl_s},
          {"sync", sync_mode_name(options_.sync)},
          {"idempotency_mode", dedupe_mode_name(options_.dedupe)},
          {"clock", clock_source_name(options_.clock)},
          // The process's wall clock as it answers, so that a reader sees which
          // time it reads; null on the logical clock, which reads none.
          {"wall_clock_s", options_.clock == ClockSource::system ? nlohmann::json(read_wall_clock_s()) : nullptr},
          {"durable_idempotency_records", totals.durable_idempotency_records},
          {"temporal_epoch", totals.temporal_epoch},
          {"max_connections", options_.connections.max_connections},
          {"open_connections", server_->open_connections()},
          {"post_commits", totals.post_commits},
          {"largest_post_group", groups.largest_group},
          {"schema_version", Store::kSchemaVersion},
          {"version", build_info::kVersion},
          {"git_commit", build_info::kGitCommit},
          {"build_type", build_info::kBuildType},
          {"sqlite_version", Store::sqlite_version()},
          {"httplib_version", CPPHTTPLIB_VERSION}};
}

bool Service::run() {
  run_started_ = true;
  const bool ok = stop_requested_ || server_->listen_after_bind();
  run_returned_ = true;
  return ok || stop_requested_;
}

void Service::stop() {
  std::call_once(stop_once_, [this] {
    stop_requested_ = true;
    if (!run_started_) return;  // run() will see stop_requested_ and not listen.
    bool listener_closed = false;
    while (!run_returned_) {
      // cpp-httplib's stop() may run only once, and only while it listens.
      if (!listener_closed && server_->is_running()) {
        server_->stop();
        listener_closed = true;
      }
      if (listener_closed) {
        // Idle keep-alive connections wait for their next request; ending the
        // read side wakes their threads, which then see the server stopped.
        server_->shut_down_connections();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
}

}  // namespace skewbench::remote_effect
