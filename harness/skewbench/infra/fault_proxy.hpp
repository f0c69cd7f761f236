#pragma once

// A loopback fault proxy between the driver and a service: the one way
// skewbench injects transport faults for a service that has no X-Drop-Ack of
// its own (remote-effect included, when asked: --ack-loss proxy).
//
// A request that carries X-Skewbench-Fault gets that fault; the header is
// removed before the request goes on, so the service never sees it:
//  - drop_ack: the proxy forwards the request, reads the service's whole
//    answer (so whatever the service commits has committed), then closes the
//    client's connection without sending a byte of it: the clean close of a
//    lost acknowledgement, as the published services make it;
//  - reset: the same, but the connection is aborted (TCP RST) instead;
//  - delay_ms=N: the request waits N ms of wall time before it is forwarded,
//    then is answered as usual.
// Any other request is forwarded and answered as the service answered it.
// When the service closes a connection without an answer (its own
// X-Drop-Ack, a crash), the proxy closes the client's too: what the client
// sees is what it would have seen without the proxy.
//
// Every exchange with the service is bounded as the driver's are
// (common/http_exchange.hpp): when the service's answer does not arrive whole
// within the deadline, or its body passes the size limit, the client gets a
// 502 whose X-Skewbench-Proxy-Error header says which; the excess is never
// read. Reading a client's request has the same deadline. The destructor cuts
// every exchange in flight, so it never waits on a slow service.
//
// The proxy counts what it did per operation (the request's
// X-Skewbench-Operation, else its X-Operation-Id), so that an acknowledgement
// it dropped is a measured count, like the service's own ack_drops.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "infra/http_remote.hpp"

namespace skewbench::infra {

inline constexpr std::string_view kFaultHeader = "X-Skewbench-Fault";
// The operation a request belongs to, for the proxy's counts, when the
// service's own wire does not carry it in X-Operation-Id; removed like the
// fault header.
inline constexpr std::string_view kOperationHeader = "X-Skewbench-Operation";
// On the proxy's own 502: why the service's answer could not be passed on.
inline constexpr std::string_view kProxyErrorHeader = "X-Skewbench-Proxy-Error";

struct Fault {
  enum class Kind { drop_ack, reset, delay };
  Kind kind = Kind::drop_ack;
  std::int64_t delay_ms = 0;  // Kind::delay: 0..60000
};

// X-Skewbench-Fault as written: "drop_ack", "reset" or "delay_ms=N"; nullopt
// for anything else.
std::optional<Fault> parse_fault(std::string_view text);

// What the proxy did for one operation, or for all.
struct ProxyCounts {
  std::int64_t forwarded = 0;       // requests sent on to the service
  std::int64_t ack_drops = 0;       // 2xx answers read and not sent on (drop_ack)
  std::int64_t resets = 0;          // answers read and the connection aborted (reset)
  std::int64_t delayed = 0;         // requests held back before forwarding (delay_ms)
  std::int64_t unanswered = 0;      // requests the service closed without an answer
  std::int64_t cut_off = 0;         // answers past the deadline or the size limit (answered 502)
  std::int64_t refused_faults = 0;  // X-Skewbench-Fault values that were not a fault (answered 400)
};

// What proxies did, per operation and in all; thread-safe. The proxies in
// front of the instances of one service share one, so that an answer one of
// them dropped counts for the operation whichever instance is asked next.
class FaultCounts {
 public:
  void add(const std::string& operation_id, std::int64_t ProxyCounts::*field);
  ProxyCounts of(const std::string& operation_id) const;
  ProxyCounts totals() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, ProxyCounts> per_operation_;
  ProxyCounts totals_;
};

class FaultProxy {
 public:
  // Listens on 127.0.0.1 on a free port and forwards to `upstream_url`
  // ("http://host:port"); every exchange on either side is bounded by
  // `limits`. Counts into `counts` (its own when null). Throws
  // InfrastructureError when it cannot listen.
  FaultProxy(const std::string& upstream_url, HttpLimits limits, std::shared_ptr<FaultCounts> counts = nullptr);
  // Stops accepting, ends every open connection, and joins their threads.
  ~FaultProxy();
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  std::string base_url() const;  // "http://127.0.0.1:PORT"
  int port() const { return port_; }
  const std::string& upstream_url() const { return upstream_url_; }

  ProxyCounts counts(const std::string& operation_id) const { return counts_->of(operation_id); }
  ProxyCounts totals() const { return counts_->totals(); }
  const FaultCounts& shared_counts() const { return *counts_; }

 private:
  void accept_loop();
  void serve(int client_fd);
  void serve_requests(int client_fd);
  // Joins the workers that have ended; the caller holds mutex_.
  void reap_finished_workers();

  std::string upstream_url_;
  HttpLimits limits_;
  int listen_fd_ = -1;
  int stop_pipe_[2] = {-1, -1};
  int port_ = 0;

  std::shared_ptr<FaultCounts> counts_;
  std::mutex mutex_;
  std::vector<int> open_fds_;  // client connections being served
  // One thread per client connection; `done` is set as it ends, and the
  // acceptor joins the finished ones before it starts the next.
  struct Worker {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::vector<Worker> workers_;
  std::thread acceptor_;
};

}  // namespace skewbench::infra
