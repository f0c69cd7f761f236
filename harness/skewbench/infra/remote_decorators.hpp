#pragma once

// Two RemoteApi decorators for a service that is not told the time or asked
// to drop an acknowledgement, but has its own clock and loses answers on the
// way (real-clock mode, --ack-loss proxy). Each records what it did in the
// exchange's "harness" object of the evidence.

#include "infra/fault_proxy.hpp"
#include "infra/ports.hpp"
#include "infra/process_clock.hpp"

namespace skewbench::infra {

// Before every request that has a time (POST /effects, GET /status, the GC),
// sets the service's process clock to exactly that time; the request itself
// carries none. Afterwards it holds the time the service says it judged at
// (a snapshot's evaluation_time, a GC's logical_time) against the one it set:
// a service that reads another clock (a static binary, a direct system call,
// a clock libfaketime does not intercept) is an InfrastructureError that says
// so, not a verdict. A service that reports no such time is recorded as not
// observed (null).
class ClockedRemote final : public ForwardingRemote {
 public:
  ClockedRemote(RemoteApi& inner, ProcessClock& clock) : ForwardingRemote(inner), clock_(&clock) {}

  PostExchange post_effect(const PostEffectRequest& request) override;
  StatusExchange status(const std::string& operation_id, std::int64_t logical_time_s) override;
  GcExchange gc(const std::string& operation_id, std::int64_t logical_time_s) override;

 private:
  ProcessClock* clock_;
};

// Counts the acknowledgements the fault proxy dropped into the ack_drops of
// every snapshot, typed and as the body reads in the evidence: the service
// never saw them dropped, the proxy did. The service's own count (of
// X-Drop-Ack, which the proxy mode does not send) is kept in the exchange's
// harness.service_ack_drops, the proxy's in harness.fault_proxy_ack_drops.
class ProxiedRemote final : public ForwardingRemote {
 public:
  // `counts`: of the proxy, or shared by the proxies of every instance.
  ProxiedRemote(RemoteApi& inner, const FaultCounts& counts) : ForwardingRemote(inner), counts_(&counts) {}

  PostExchange post_effect(const PostEffectRequest& request) override;
  StatusExchange status(const std::string& operation_id, std::int64_t logical_time_s) override;

 private:
  void add_proxy_drops(remote_effect::StatusAnswer& answer, const std::string& operation_id,
                       HttpExchange& exchange) const;
  const FaultCounts* counts_;
};

}  // namespace skewbench::infra
