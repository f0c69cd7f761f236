#pragma once

// The effect sink: an HTTP server skewbench owns, which a service under test
// calls as its downstream provider (the payment processor, the mailer) to
// perform an effect. A scenario's effect count is read here, from calls
// skewbench received itself, never from the service's word.
//
// The sink listens on 127.0.0.1 on a free port, on the connection loop of
// every skewbench server (common/connection_server.hpp). Each instance of the
// service gets its own base URL, url(instance) = http://127.0.0.1:P/instance/NAME,
// which the target's command or environment passes as {sink_url}; the service
// appends its own path. Every call is recorded, in arrival order: when, to
// which instance, the operation id (read from a header, a JSON pointer into
// the body or a path segment, as the target declares), method, path, the
// SHA-256 of the body, and how it was answered.
//
// What it records is bounded, whatever a service sends: the body as its
// SHA-256 and size only; the operation id, path and method with every byte
// that is not printable ASCII written \xNN (so that the evidence, a
// terminal and RESULT.md show them as bytes, never as control characters or
// broken UTF-8), an id over kMaxOperationIdBytes shortened with its size
// (it then matches no operation); and at most kMaxCallsPerWindow calls per
// window (a scenario, begin_window()): a call past that is answered 503, not
// applied, and counted as refused (refused_in_window()).
//
// Applied calls are the effects: a call answered 200, at once, after a delay
// (slow) or when released (hold). A call the sink fails (500, a TCP reset, a
// close with no answer) performed nothing, as a provider that failed.
//
// Faults are armed before the calls they apply to, and are taken by the next
// matching calls in arrival order. A held call waits on an event until
// release() or the sink's destruction (which closes it unanswered and
// unapplied); wait_until_held() waits on the same event: nothing here sleeps.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/connection_server.hpp"
#include "common/vocabulary.hpp"

namespace skewbench::infra {

// Where a call to the sink carries the operation's id.
struct OperationIdSource {
  enum class From { header, json_pointer, path_segment };
  From from = From::header;
  std::string header = "Idempotency-Key";  // From::header (names compare case-insensitively)
  std::string json_pointer;                // From::json_pointer: RFC 6901, into the JSON body
  std::size_t path_segment = 0;            // From::path_segment: 0 is the first segment after the instance's prefix

  // As a target file writes it: {"header": NAME}, {"json_pointer": P} or {"path_segment": N}.
  nlohmann::json to_json() const;
};

// What the sink does to one call.
enum class SinkFaultKind {
  hold,       // answer 200 (applied) only when released
  slow,       // answer 200 (applied) after delay_ms
  fail_500,   // answer 500: not applied
  reset,      // abort the connection (TCP RST), no answer: not applied
  no_answer,  // close the connection without a byte: not applied
};
inline constexpr auto kSinkFaultKinds = vocabulary<SinkFaultKind>({{SinkFaultKind::hold, "hold"},
                                                                   {SinkFaultKind::slow, "slow"},
                                                                   {SinkFaultKind::fail_500, "fail_500"},
                                                                   {SinkFaultKind::reset, "reset"},
                                                                   {SinkFaultKind::no_answer, "no_answer"}});

struct SinkFault {
  SinkFaultKind kind = SinkFaultKind::hold;
  // Only calls for this operation; any call when unset.
  std::optional<std::string> operation_id;
  std::int64_t calls = 1;     // how many matching calls it takes, >= 1
  std::int64_t delay_ms = 0;  // SinkFaultKind::slow: 0..60000
};

// How a recorded call was answered.
enum class SinkAnswer {
  pending,    // held, or slowed, and not answered yet
  ok,         // 200: applied
  fail_500,   // 500: not applied
  reset,      // aborted: not applied
  no_answer,  // closed without a byte: not applied
  stopped,    // the sink stopped while it was held: closed unanswered, not applied
  dropped,    // its caller died while it was held (drop_held): closed unanswered, not applied
};
inline constexpr auto kSinkAnswers = vocabulary<SinkAnswer>({{SinkAnswer::pending, "pending"},
                                                             {SinkAnswer::ok, "ok"},
                                                             {SinkAnswer::fail_500, "fail_500"},
                                                             {SinkAnswer::reset, "reset"},
                                                             {SinkAnswer::no_answer, "no_answer"},
                                                             {SinkAnswer::stopped, "stopped"},
                                                             {SinkAnswer::dropped, "dropped"}});

struct SinkCall {
  std::int64_t sequence = 0;                // 1, 2, ... in arrival order
  std::int64_t received_unix_ms = 0;        // by the sink's clock (Options::now_unix_ms)
  std::optional<std::string> instance;      // from the URL's /instance/NAME prefix; unset without one
  std::optional<std::string> operation_id;  // unset when not where the target said it is
  std::string method;
  std::string path;  // after the instance's prefix, query included
  std::string body_sha256;
  std::size_t body_bytes = 0;
  std::optional<SinkFaultKind> fault;  // the fault it took, if any
  SinkAnswer answer = SinkAnswer::pending;

  bool applied() const { return answer == SinkAnswer::ok; }
  // One line of the sink's log in the evidence.
  nlohmann::json to_json() const;
};

inline constexpr std::size_t kMaxCallsPerWindow = 1000;
inline constexpr std::size_t kMaxOperationIdBytes = 256;
inline constexpr std::size_t kMaxRecordedPathBytes = 1024;

class EffectSink {
 public:
  struct Options {
    OperationIdSource operation_id;
    // The time a call is recorded at. Injected: the runner passes the wall
    // clock, the tests a fixed one.
    std::function<std::int64_t()> now_unix_ms;
    // Bounds on reading a call (the sink's side of every exchange).
    http::ConnectionLimits limits = {.max_connections = 64,
                                     .idle_timeout = std::chrono::seconds(10),
                                     .header_timeout = std::chrono::seconds(5),
                                     .body_timeout = std::chrono::seconds(10)};
  };

  // Listens on 127.0.0.1 on a free port. Throws InfrastructureError when it
  // cannot.
  explicit EffectSink(Options options);
  // Closes every held call unanswered, stops and joins the server.
  ~EffectSink();
  EffectSink(const EffectSink&) = delete;
  EffectSink& operator=(const EffectSink&) = delete;

  int port() const { return port_; }
  // The base URL instance `instance` calls: http://127.0.0.1:P/instance/NAME.
  std::string url(const std::string& instance) const;

  // Arms a fault for the next matching calls. Throws std::invalid_argument
  // when `calls` < 1 or a delay is outside 0..60000 ms.
  void arm(const SinkFault& fault);
  // Faults armed and not yet taken by a call, dropped.
  void disarm_all();

  // Waits until at least `count` calls (of `operation_id`, or any) are held
  // and unreleased, or `timeout` passes; whether they were.
  bool wait_until_held(const std::optional<std::string>& operation_id, std::size_t count,
                       std::chrono::milliseconds timeout);
  // Answers every held call (of `operation_id`, or any) 200; how many.
  std::size_t release(const std::optional<std::string>& operation_id);
  // Ends every held call of instance `instance` (its caller died) closed
  // unanswered: not applied, answer `dropped`; how many.
  std::size_t drop_held(const std::string& instance);

  // A new window (a scenario starts): up to kMaxCallsPerWindow calls from
  // now are recorded and answered; the count of refused ones starts at 0.
  void begin_window();
  // The calls refused since begin_window() because the window was full.
  std::size_t refused_in_window() const;

  // Waits until no call has arrived for `quiet` (a service's call made a
  // little after its answer lands first) and none is on its way in (in the
  // listen backlog, received and not yet read, being read), or `at_most`
  // passes; whether it went quiet. A held or slow call, already recorded,
  // does not keep it waiting.
  bool wait_quiet(std::chrono::milliseconds quiet, std::chrono::milliseconds at_most);

  // Every call so far, in arrival order, and how many there are.
  std::vector<SinkCall> calls() const;
  std::size_t call_count() const;
  // Calls for `operation_id` that were applied.
  std::int64_t applied(const std::string& operation_id) const;

 private:
  void handle(const httplib::Request& request, httplib::Response& response);
  // Records the call and takes the first armed fault it matches; the call's
  // index in calls_. The caller holds mutex_.
  std::size_t record_locked(const httplib::Request& request, std::optional<SinkFault>& fault);
  // How a held call ends.
  enum class HoldEnd { waiting, released, dropped };
  // Waits for the release or drop of held call `index` (or the sink's stop);
  // how it was answered. The lock is mutex_'s.
  SinkAnswer hold_locked(std::unique_lock<std::mutex>& lock, std::size_t index);

  Options options_;
  std::unique_ptr<http::ConnectionServer> server_;
  int port_ = 0;
  std::thread listener_;

  mutable std::mutex mutex_;
  std::condition_variable changed_;  // a call arrived, was held, released, or the sink stops
  std::vector<SinkCall> calls_;
  std::deque<SinkFault> armed_;
  std::map<std::size_t, HoldEnd> held_;  // index in calls_ -> how it ended
  bool stopping_ = false;
  std::size_t window_start_ = 0;  // index in calls_ where the window began
  std::size_t refused_in_window_ = 0;
  std::atomic<std::size_t> handling_{0};  // calls inside handle(): held, slow, or being answered
};

// The operation id of a call, read where `source` says: nullopt when it is not
// there (no such header, a body that is not JSON or has no string or integer
// at the pointer, too few path segments). `path` is after the instance's
// prefix, without the query.
std::optional<std::string> read_operation_id(const OperationIdSource& source, const httplib::Headers& headers,
                                             std::string_view path, std::string_view body);

}  // namespace skewbench::infra
