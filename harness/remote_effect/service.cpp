#include "remote_effect/service.hpp"

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>
#include <thread>

#include <httplib.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>
#include <skewbench/build_info.hpp>

#include "remote_effect/connection_sockets.hpp"

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
    case 413:
      return {{"error", "payload_too_large"}, {"limit_bytes", kMaxBodyBytes}};
    case 414:
      return {{"error", "uri_too_long"}};
    case 416:
      return {{"error", "range_not_satisfiable"}};
    case 500:
      return {{"error", "internal_error"}};
    default:
      return {{"error", "http_" + std::to_string(status)}};
  }
}

std::string host_name() {
  std::array<char, 256> buffer{};
  if (::gethostname(buffer.data(), buffer.size() - 1) != 0) return "unknown";
  return buffer.data();
}

// Closes the request's connection without sending a response byte. Shutting
// the socket down in both directions makes cpp-httplib's response write fail
// (SIGPIPE is ignored by the process), after which it closes the socket.
void drop_connection(const httplib::Request& req) {
  const auto fd = find_connection_socket(req.local_port, req.remote_addr, req.remote_port);
  if (!fd) {
    throw std::runtime_error("drop_ack_failed: no socket found for the connection from " + req.remote_addr + ":" +
                             std::to_string(req.remote_port));
  }
  ::shutdown(*fd, SHUT_RDWR);
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
      store_(std::make_unique<Store>(options_.state_db, options_.sync)),
      server_(std::make_unique<httplib::Server>()) {
  install_routes();
}

Service::~Service() = default;

void Service::install_routes() {
  auto& server = *server_;
  const std::size_t threads = options_.threads;
  server.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  server.set_tcp_nodelay(true);
  // SO_REUSEADDR lets a restarted service bind its old port at once; unlike
  // cpp-httplib's default SO_REUSEPORT it does not let two live processes
  // share a port, so a port in use is reported rather than silently shared.
  server.set_socket_options([this](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    listen_fd_ = sock;  // the last socket created is the one that gets bound
  });
  server.set_keep_alive_max_count(100000);
  server.set_keep_alive_timeout(static_cast<time_t>(options_.keep_alive_timeout_s));
  server.set_read_timeout(10, 0);
  server.set_write_timeout(10, 0);
  server.set_payload_max_length(kMaxBodyBytes);

  server.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request&, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    res.set_content(error_body_for_status(res.status).dump(), kJson);
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
    reply(res, 500, {{"error", "internal_error"}, {"detail", detail}});
  });

  server.Get("/health", [this](const httplib::Request&, httplib::Response& res) { reply(res, 200, health()); });

  server.Get(R"(/status/(.*))", [this](const httplib::Request& req, httplib::Response& res) {
    auto parsed = parse_status_request(req.matches[1].str(), copy_headers(req.headers));
    if (const auto* error = std::get_if<RequestError>(&parsed)) return reply(res, *error);
    const auto& request = std::get<StatusRequest>(parsed);
    reply(res, 200,
          snapshot_json(request.operation_id, request.evaluation_time_s, store_->read(request.operation_id), boot_id_));
  });

  server.Post("/effects", [this](const httplib::Request& req, httplib::Response& res) { handle_post(req, res); });

  // cpp-httplib waits for end-of-stream (up to its read timeout) to read the
  // body of a POST, PUT, PATCH or DELETE that has neither Content-Length nor
  // Transfer-Encoding. HTTP says such a request has an empty body, so it is
  // answered here, before cpp-httplib tries to read one.
  server.set_pre_routing_handler(
      httplib::Server::HandlerWithResponse([this](const httplib::Request& req, httplib::Response& res) {
        const bool may_have_body = req.method == "POST" || req.method == "PUT" || req.method == "PATCH" ||
                                   req.method == "DELETE" || req.method == "PRI";
        if (!may_have_body || req.has_header("Content-Length") || req.has_header("Transfer-Encoding")) {
          return httplib::Server::HandlerResponse::Unhandled;
        }
        if (req.method == "POST" && req.path == "/effects") {
          handle_post(req, res);
        } else {
          reply(res, 404, error_body_for_status(404));
        }
        return httplib::Server::HandlerResponse::Handled;
      }));
}

void Service::handle_post(const httplib::Request& req, httplib::Response& res) {
  auto parsed = parse_post_request(copy_headers(req.headers), req.body, options_.default_ttl_s);
  if (const auto* error = std::get_if<RequestError>(&parsed)) return reply(res, *error);
  const auto& request = std::get<PostRequest>(parsed);

  const auto result = store_->post(request);
  if (result.delivery == Delivery::refused_other_operation || result.delivery == Delivery::refused_different_payload) {
    return reply(res, refusal_error(result.delivery));
  }
  if (request.drop_ack) {
    // The effect and its ack_drops count are committed; now vanish.
    drop_connection(req);
    return;
  }
  auto body = snapshot_json(request.operation_id, request.logical_time_s, result.state, boot_id_);
  body["delivery"] = delivery_name(result.delivery);
  body["idempotency_key"] = request.idempotency_key;
  body["ttl_seconds"] = request.ttl_s;
  reply(res, 200, body);
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
          {"sync", sync_mode_name(options_.sync)}};
}

nlohmann::json Service::health() const {
  return {{"status", "ok"},
          {"service", "remote-effect"},
          {"boot_id", boot_id_},
          {"hostname", host_name()},
          {"pid", ::getpid()},
          {"state_db", state_db_absolute_.string()},
          {"default_ttl_seconds", options_.default_ttl_s},
          {"sync", sync_mode_name(options_.sync)},
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
        // read side wakes their workers, which then see the server stopped.
        for (const auto& socket : connected_tcp_sockets()) ::shutdown(socket.fd, SHUT_RD);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
}

}  // namespace skewbench::remote_effect
