#pragma once

// The HTTP face of the remote-effect service: routes, JSON bodies, drop-ack,
// and a prompt shutdown. The protocol is described in docs/remote-effect.md.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "common/connection_server.hpp"
#include "remote_effect/group_commit.hpp"
#include "remote_effect/store.hpp"

namespace skewbench::remote_effect {

using http::ConnectionLimits;
using http::ConnectionServer;
using http::ReadFailure;

struct ServiceOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0 = any free port
  std::filesystem::path state_db;
  SyncMode sync = SyncMode::full;
  std::int64_t default_ttl_s = 60;
  DedupeMode dedupe = kDefaultDedupeMode;
  // Whose clock gives each request its time (system: the process's own).
  ClockSource clock = ClockSource::logical;
  // The wall clock the system clock source reads, in whole seconds of the
  // Unix epoch; empty reads CLOCK_REALTIME (which libfaketime intercepts).
  std::function<std::int64_t()> wall_clock_s;
  ConnectionLimits connections;
  // Concurrent POSTs committed together in one transaction, at most.
  std::size_t max_group_posts = 64;
};

// The address or port cannot be bound.
class BindError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A fresh 128-bit identifier from the kernel's random source, as 32 hex digits.
std::string new_boot_id();

class Service {
 public:
  // Opens the state database (throws StoreError) and sets up the routes.
  explicit Service(ServiceOptions options);
  ~Service();
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // Binds the listening socket; returns the port actually bound. Throws BindError.
  int bind();

  // The one JSON line printed when the service is ready to accept connections.
  nlohmann::ordered_json ready_line() const;

  nlohmann::json health() const;

  // Serves until stop(); returns once every worker has finished. False when
  // the listening socket failed instead of being stopped.
  bool run();

  // Stops accepting, lets in-flight requests finish, and closes idle
  // keep-alive connections so run() returns promptly. Safe from any thread;
  // when run() has started, returns only after run() has returned.
  void stop();

  const std::string& boot_id() const { return boot_id_; }

 private:
  void install_routes();
  void install_error_handlers();
  void handle_post(const httplib::Request& req, httplib::Response& res, std::string_view body);
  void handle_post_with_reader(const httplib::Request& req, httplib::Response& res,
                               const httplib::ContentReader& reader);
  void handle_gc(const httplib::Request& req, httplib::Response& res);
  // The headers and head a handler reads: as received on the logical clock;
  // on the system clock with the process's own reading as the request's time.
  OwnClockRequest request_as_read(const httplib::Request& req) const;
  std::int64_t read_wall_clock_s() const;

  ServiceOptions options_;
  std::filesystem::path state_db_absolute_;
  std::string boot_id_;
  int bound_port_ = -1;
  int listen_fd_ = -1;
  std::unique_ptr<Store> store_;
  std::unique_ptr<GroupCommitter> committer_;
  std::unique_ptr<ConnectionServer> server_;
  std::atomic<bool> run_started_{false};
  std::atomic<bool> stop_requested_{false};
  std::atomic<bool> run_returned_{false};
  std::once_flag stop_once_;
};

}  // namespace skewbench::remote_effect
