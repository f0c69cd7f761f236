#include "runner/instances.hpp"

#include "common/errors.hpp"
#include "infra/process_clock.hpp"

namespace skewbench::runner {

template <typename Exchange>
Exchange InstanceClient::named(Exchange exchange) const {
  if (name_.empty()) return exchange;
  if (exchange.harness.is_null()) exchange.harness = nlohmann::json::object();
  exchange.harness["instance"] = name_;
  return exchange;
}

infra::PostExchange InstanceClient::post_effect(const infra::PostEffectRequest& request) {
  auto at_own_clock = request;
  at_own_clock.logical_time_s = time_s(request.logical_time_s);
  return named(inner().post_effect(at_own_clock));
}

infra::StatusExchange InstanceClient::status(const std::string& operation_id, std::int64_t logical_time_s) {
  return named(inner().status(operation_id, time_s(logical_time_s)));
}

infra::GcExchange InstanceClient::gc(const std::string& operation_id, std::int64_t logical_time_s) {
  return named(inner().gc(operation_id, time_s(logical_time_s)));
}

ScenarioInstances::ScenarioInstances(const scenario::Scenario& s, steps::StepContext& context, infra::RemoteApi& first,
                                     ServiceInstances* more)
    : more_(more) {
  const auto count = s.instance_count();
  if (count > 1 && more == nullptr) {
    throw InfrastructureError("the scenario runs an instance of the service per node ($.remote.instances), and " +
                              std::to_string(count) + " instances need a service skewbench starts");
  }
  for (std::size_t i = 0; i < count; ++i) {
    Instance instance;
    instance.remote = i == 0 ? &first : &more->instance(i);
    instance.clock = more ? more->process_clock(i) : nullptr;
    instance.name = more ? more->instance_name(i) : "remote";
    switch (s.service.clock) {
      case scenario::ServiceClock::request:
        instance.follows = "request";
        break;
      case scenario::ServiceClock::node: {
        const auto node_id = s.nodes[i].node_id;
        instance.follows = "node:" + node_id;
        instance.reading_s = [&context, node_id] { return context.clock(node_id).read(context.step_reference_s); };
        break;
      }
      case scenario::ServiceClock::authority: {
        const auto* authority = s.policy->authority();
        instance.follows = "authority:" + authority->identity;
        instance.reading_s = [&context, authority] { return authority->read(context.step_reference_s); };
        break;
      }
    }
    if (instance.reading_s || count > 1) {
      instance.client =
          std::make_unique<InstanceClient>(*instance.remote, count > 1 ? instance.name : "", instance.reading_s);
      instance.remote = instance.client.get();
    }
    if (count > 1) {
      context.node_remotes[s.nodes[i].node_id] = instance.remote;
      context.node_instances[s.nodes[i].node_id] = i;
    }
    instances_.push_back(std::move(instance));
  }
  // Steps without a node, and every node of a one-instance scenario, reach
  // the first instance through the clock it judges by.
  context.remote = instances_.front().remote;
  if (auto* store_clock = more ? more->store_clock() : nullptr) {
    Instance store;
    store.clock = store_clock;
    store.name = more->store_name();
    store.follows = "store";
    if (const auto& node_id = s.service.store_node) {
      store.reading_s = [&context, node = *node_id] { return context.clock(node).read(context.step_reference_s); };
    } else {
      store.reading_s = [&context] { return context.step_reference_s; };
    }
    instances_.push_back(std::move(store));
  }
}

void ScenarioInstances::drive_clocks() {
  for (auto& instance : instances_) {
    if (instance.clock && instance.reading_s) instance.clock->set(instance.reading_s());
  }
}

nlohmann::json ScenarioInstances::process_clocks() {
  nlohmann::json out = nlohmann::json::array();
  for (auto& instance : instances_) {
    if (!instance.clock) continue;
    const auto set_s = instance.clock->now_s();
    // A stopped (paused) instance cannot be asked; its clock is then only as
    // set. The store (no remote) is asked through its clock probe.
    std::optional<std::int64_t> read_s;
    if (instance.remote) {
      if (!(more_ && more_->paused())) read_s = instance.remote->health().answer.wall_clock_s;
    } else if (more_) {
      read_s = more_->store_wall_clock_s();
    }
    out.push_back({{"instance", instance.name},
                   {"follows", instance.follows},
                   {"set_s", set_s},
                   {"read_s", read_s ? nlohmann::json(*read_s) : nlohmann::json(nullptr)}});
    if (read_s && *read_s != set_s) {
      throw InfrastructureError(instance.name + " reads its wall clock as " + std::to_string(*read_s) +
                                " s, but skewbench set it to " + std::to_string(set_s) +
                                " s: it does not read the clock skewbench drives (docs/real-clocks.md)");
    }
  }
  return out.empty() ? nlohmann::json(nullptr) : out;
}

}  // namespace skewbench::runner
