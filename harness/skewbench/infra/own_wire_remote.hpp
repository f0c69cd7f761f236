#pragma once

// A service under test that speaks its own wire (a black-box target,
// docs/targets.md): its own route and body for the scenario's POST, its own
// status codes, its effects performed by calling skewbench's effect sink
// (infra/effect_sink.hpp). OwnWireRemote gives the steps the RemoteApi they
// know:
//  - post_effect renders the target's request (method, path, key header,
//    headers, body, with {operation_id}, {idempotency_key} and {amount}),
//    sends it through the instance's fault proxy (ack loss is the proxy's
//    drop_ack), and classifies the answer by the target's rules: applied,
//    replayed, refused (in progress, payload mismatch) or error; an answer
//    the rules call applied_or_replayed is applied when the sink took a call
//    for the operation while the request was in flight, replayed otherwise;
//  - every snapshot (the POST's, status()) is counted by skewbench: effects
//    are the sink's applied calls for the operation, POSTs the ones this
//    client sent that the service took, acknowledgements dropped the proxy's.
//    The service is never asked.
// An answer the rules call an error, a status they do not list, and an answer
// of applied or replayed while the sink holds no applied call for the
// operation (a service that performs its effect elsewhere, or a sink rule
// that does not find the id) are InfrastructureErrors naming the target:
// ERROR rows, never verdicts.

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/vocabulary.hpp"
#include "infra/effect_sink.hpp"
#include "infra/fault_proxy.hpp"
#include "infra/http_remote.hpp"
#include "infra/ports.hpp"

namespace skewbench::infra {

// What a service's answer to the scenario's POST means.
enum class AnswerClass {
  applied,              // it performed the effect now
  replayed,             // it answered from its idempotency record: nothing new
  applied_or_replayed,  // a 2xx that does not say which (a replay that is the
                        // first answer as it was sent): the sink tells
  refused_in_progress,  // the key's first request is still in flight
  refused_mismatch,     // the key was used with another payload
  error,                // anything else: an ERROR row, unless the sink failed the
                        // operation's provider call (TransportOutcome::ProviderFailed)
};
inline constexpr auto kAnswerClasses =
    vocabulary<AnswerClass>({{AnswerClass::applied, "applied"},
                             {AnswerClass::replayed, "replayed"},
                             {AnswerClass::applied_or_replayed, "applied_or_replayed"},
                             {AnswerClass::refused_in_progress, "refused_in_progress"},
                             {AnswerClass::refused_mismatch, "refused_mismatch"},
                             {AnswerClass::error, "error"}});

// The placeholders of a request template ({amount}: the request's amount).
inline constexpr std::string_view kRequestPlaceholders[] = {"{operation_id}", "{idempotency_key}", "{amount}"};

// How a scenario's POST goes on the service's wire, and how its answer reads
// ($.request and $.answer of a target file).
struct OwnWire {
  std::string target;  // the target's name, for messages
  std::string method = "POST";
  std::string path;                                          // template
  std::string key_header = "Idempotency-Key";                // carries the scenario's idempotency key
  std::vector<std::pair<std::string, std::string>> headers;  // values are templates
  std::string body;                                          // template
  // The class of an answer's status; a status not listed is an error.
  std::map<int, AnswerClass> by_status;
  // When set, a string at this JSON pointer in the answer classifies it by
  // by_value first; an answer without it falls back to by_status.
  std::optional<std::string> json_pointer;
  std::map<std::string, AnswerClass> by_value;
};

// `text` with every placeholder of kRequestPlaceholders replaced from
// `values` (keyed "{name}"). A placeholder (common/text.hpp) that `values`
// lacks throws std::invalid_argument naming it; other braces (a JSON body's)
// stay as they are.
std::string render_template(std::string_view text, const std::map<std::string, std::string>& values);

// Whether `wire`'s request carries {amount} (in its path, a header or its
// body): a POST of another amount is then another request.
bool carries_amount(const OwnWire& wire);

// The class of an answer by `wire`'s rules.
AnswerClass classify_answer(const OwnWire& wire, int status, const std::string& body);

// The POSTs the instances of one service took, per operation: counted by
// skewbench as it sends them, across instances. Thread-safe.
class PostTally {
 public:
  void add(const std::string& operation_id);
  std::int64_t of(const std::string& operation_id) const;
  // Whether an answer that does not say if it performed the effect may be
  // read as the one that did: the sink holds `applied_now` applied calls for
  // the operation, more than answers already read as applied. Each applied
  // call is read into one answer, so POSTs in flight together that each saw
  // the one call arrive are one applied answer and replays, not several.
  bool claim_applied(const std::string& operation_id, std::int64_t applied_now);

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::int64_t> taken_;
  std::map<std::string, std::int64_t> claimed_;
};

// Thread-safe: POSTs may be in flight together.
class OwnWireRemote final : public RemoteApi {
 public:
  // `driver_url`: where requests go (the instance's fault proxy, with
  // `proxy_counts` its counts; or the service itself, null counts, when
  // nothing is dropped). `sink` counts the effects, `tally` the POSTs of
  // every instance; both outlive this.
  OwnWireRemote(OwnWire wire, const std::string& driver_url, HttpLimits limits, const EffectSink& sink,
                PostTally& tally, const FaultCounts* proxy_counts);

  PostExchange post_effect(const PostEffectRequest& request) override;
  // A snapshot counted by skewbench (the sink, this client, the proxy); the
  // exchange is recorded as a read of the sink, not a request to the service.
  StatusExchange status(const std::string& operation_id, std::int64_t logical_time_s) override;
  // The service's own wire reports nothing: a body naming the target and no
  // boot_id, clock or mode.
  HealthExchange health() override;
  // Throws InfrastructureError: a service's own wire has no GC.
  GcExchange gc(const std::string& operation_id, std::int64_t logical_time_s) override;

 private:
  // The operation's snapshot as skewbench counted it.
  remote_effect::StatusAnswer counted(const std::string& operation_id) const;
  // What the sink held for the operation before a request was sent.
  struct SinkBefore {
    std::int64_t applied = 0;  // its applied calls for the operation
    std::size_t calls = 0;     // every call so far, of any operation
  };
  // The exchange's answer, classified; throws InfrastructureError for an
  // error, or a claimed effect the sink has no call of.
  PostExchange read_answer(PostExchange ex, const http::Exchange& answer, const PostEffectRequest& request,
                           const SinkBefore& before);
  // Why the sink may hold no call of an operation, with the calls it took
  // since `before` (where the service sent them, and the operation id the
  // target's rule read in each), for a message.
  std::string no_sink_call(const SinkBefore& before) const;
  // An answer read as a delivery must be one the sink saw: throws naming
  // what it lacks (no applied call at all; none during an applied request).
  void check_delivery(const std::string& answered, AnswerClass kind, const PostEffectRequest& r,
                      const SinkBefore& before);
  // Whether the sink failed a provider call for the operation (500, a reset,
  // no answer) and holds none applied for it.
  bool provider_failed(const std::string& operation_id) const;

  // A transport carries one exchange at a time: a POST sent while another
  // is in flight (steps/in_flight_steps.cpp) takes one of its own, kept
  // for the next.
  class Lease {
   public:
    explicit Lease(OwnWireRemote& remote);
    ~Lease();
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    HttpRemote* operator->() const { return transport_.get(); }

   private:
    OwnWireRemote* remote_;
    std::unique_ptr<HttpRemote> transport_;
  };

  OwnWire wire_;
  std::string driver_url_;
  HttpLimits limits_;
  std::mutex transports_mutex_;
  std::vector<std::unique_ptr<HttpRemote>> idle_transports_;
  const EffectSink* sink_;
  PostTally* tally_;
  const FaultCounts* proxy_counts_;
};

}  // namespace skewbench::infra
