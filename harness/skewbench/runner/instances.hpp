#pragma once

// The instances of the service under test a scenario reaches, and whose clock
// each judges a request by ($.remote.instances, $.remote.clock;
// docs/real-clocks.md).
//
// A scenario runs one instance, or one per node on a shared backing store.
// Each instance judges expiry at one time per request:
//  - request: the time the request carries (the sending node's reading, or
//    the time its policy decided at), as the published wire does;
//  - node: its node's clock, reference time + the node's offset now;
//  - authority: the policy's declared authority, reference time + its offset.
// The service's store, when it runs as a process of its own (a target's
// Redis), reads the clock of $.remote.store_node, else the reference time.
// In --clock-mode real that time is the instance's own wall clock, set under
// libfaketime: a node or authority clock is written before and after every
// step (so a clock step takes effect at once, and the passage of scenario time
// is a write, never a sleep), a request clock before every request.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "infra/ports.hpp"
#include "scenario/scenario.hpp"
#include "steps/step.hpp"

namespace skewbench::infra {
class ProcessClock;
}

namespace skewbench::runner {

// The started instances of the service, as a run reaches them (the session
// implements it over the stack).
class ServiceInstances {
 public:
  virtual ~ServiceInstances() = default;
  // The client of instance `index` (0 is the first), starting the instances up
  // to it on the first one's backing store when they do not run yet. Throws
  // InfrastructureError when it cannot.
  virtual infra::RemoteApi& instance(std::size_t index) = 0;
  // Its wall clock when it reads its own (--clock-mode real); null when each
  // request carries its time.
  virtual infra::ProcessClock* process_clock(std::size_t index) = 0;
  // Its name in the evidence ("remote-effect", "remote-effect@2", ...).
  virtual std::string instance_name(std::size_t index) const = 0;
  // The wall clock of the service's store process in real-clock mode (a
  // target's Redis), and the store's name; null when there is none.
  virtual infra::ProcessClock* store_clock() = 0;
  virtual std::string store_name() const = 0;
  // The store's wall clock as the store reads it (its target's clock probe);
  // nullopt when it cannot be asked.
  virtual std::optional<std::int64_t> store_wall_clock_s() = 0;
  // The instances are stopped by a pause_remote step: they cannot be asked
  // their clock until they go on.
  virtual bool paused() const = 0;
  // Stops every instance, so that every call it makes to its provider after
  // its answers has reached the effect sink before a scenario's count is read
  // (Stack::settle_instances); they start again before the next scenario.
  virtual void settle() = 0;
};

// One instance as a scenario's steps reach it. With a clock of its own (a
// node's or the authority's), every request's time is replaced by that
// clock's reading, so the service judges at its clock whatever the sending
// step would have carried. With a name, every exchange records it
// ("harness": {"instance": ...}), so that the evidence shows which instance
// answered.
class InstanceClient final : public infra::ForwardingRemote {
 public:
  InstanceClient(infra::RemoteApi& inner, std::string name, std::function<std::int64_t()> reading_s)
      : ForwardingRemote(inner), name_(std::move(name)), reading_s_(std::move(reading_s)) {}

  infra::PostExchange post_effect(const infra::PostEffectRequest& request) override;
  infra::StatusExchange status(const std::string& operation_id, std::int64_t logical_time_s) override;
  infra::GcExchange gc(const std::string& operation_id, std::int64_t logical_time_s) override;

 private:
  std::int64_t time_s(std::int64_t carried_s) const { return reading_s_ ? reading_s_() : carried_s; }
  template <typename Exchange>
  Exchange named(Exchange exchange) const;

  std::string name_;  // empty: not recorded
  std::function<std::int64_t()> reading_s_;
};

// One scenario's view of the service: the instance each node reaches, each
// instance's clock, and the process clocks to drive. Built per scenario by
// the runner; `context` must outlive it.
class ScenarioInstances {
 public:
  // `first` is instance 0; `more` gives the others (null: the scenario may
  // reach only the first, and a scenario with an instance per node is an
  // InfrastructureError).
  ScenarioInstances(const scenario::Scenario& scenario, steps::StepContext& context, infra::RemoteApi& first,
                    ServiceInstances* more);

  infra::RemoteApi& first() { return *instances_.front().remote; }
  // Sets every process clock that follows a node or the authority to its
  // reading at the context's current reference time.
  void drive_clocks();
  // Every process clock as set and as its process reads it (asked of the
  // process: an instance's /health wall_clock_s, the store's clock probe;
  // null where it reports none); null
  // when no instance has a process clock. Throws InfrastructureError when a
  // process reads another time than the one set: it does not read the clock
  // skewbench drives, and nothing it judged may become a verdict.
  nlohmann::json process_clocks();

 private:
  // An instance of the service, or its store (no remote: asked through its
  // target's clock probe).
  struct Instance {
    infra::RemoteApi* remote = nullptr;  // as the steps reach it (through client when set)
    std::unique_ptr<InstanceClient> client;
    infra::ProcessClock* clock = nullptr;
    std::string name;
    std::string follows;                      // "request", "node:<id>" or "authority:<identity>"
    std::function<std::int64_t()> reading_s;  // empty when it follows the request
  };
  std::vector<Instance> instances_;
  ServiceInstances* more_ = nullptr;
};

}  // namespace skewbench::runner
