#include "explore/engines.hpp"

#include "runner/session.hpp"

namespace skewbench::explore {
namespace {

using nlohmann::json;

// Operation ids and keys derive from it; one id keeps every run of a seed the same.
constexpr const char* kInProcessRunId = "explore";

Ran run_one(const Bounds& bounds, runner::ScenarioRunner& runner, const json& document) {
  Ran ran{.scenario = scenario::parse_scenario(document, "explore"), .result = {}, .breach = std::nullopt};
  ran.result = runner.run(ran.scenario);
  ran.breach = first_breach(bounds, ran.scenario, ran.result);
  return ran;
}

// One remote and one outbox, emptied before each scenario, as a sweep worker's.
class InProcessEngine final : public Engine {
 public:
  explicit InProcessEngine(const Bounds& bounds)
      : bounds_(bounds),
        remote_({.state_file = std::nullopt,
                 .mode = remote_effect::kDefaultDedupeMode,
                 .boot_id = std::string("in-process-") + kInProcessRunId,
                 .default_ttl_s = 60}),
        runner_(remote_, outbox_,
                runner::RunnerOptions{.run_id = kInProcessRunId,
                                      .remote_control = nullptr,
                                      .interrupted = nullptr,
                                      .evaluate_expectations = true,
                                      .database_control = nullptr,
                                      .instances = nullptr}) {}

  infra::Engine kind() const override { return infra::Engine::in_process; }

  Ran run(const json& document) override {
    remote_.clear();
    outbox_.clear();
    return run_one(bounds_, runner_, document);
  }

  evidence::RunEnvironment environment() override {
    return evidence::describe_in_process_environment(kInProcessRunId, remote_.health().body);
  }

 private:
  const Bounds& bounds_;
  infra::InProcessRemote remote_;
  infra::InProcessOutbox outbox_;
  runner::ScenarioRunner runner_;
};

// The services of one run, shared by every scenario as a run's are.
class RealEngine final : public Engine {
 public:
  RealEngine(const Bounds& bounds, const runner::StackOptions& services, const std::atomic<bool>* stop)
      : bounds_(bounds),
        run_id_(runner::new_run_id()),
        session_({.services = services, .run_id = run_id_, .dedupe_mode = std::nullopt}),
        runner_(session_.remote(), session_.outbox(),
                runner::RunnerOptions{.run_id = run_id_,
                                      .remote_control = session_.stack().remote_control(),
                                      .interrupted = stop,
                                      .evaluate_expectations = true,
                                      .database_control = session_.stack().database_control(),
                                      .instances = &session_,
                                      .effect_sink = session_.stack().effect_sink()}),
        environment_(evidence::describe_environment(run_id_, session_.description())) {}

  infra::Engine kind() const override { return infra::Engine::real; }

  Ran run(const json& document) override {
    session_.stack().start_stopped_instances();
    return run_one(bounds_, runner_, document);
  }

  evidence::RunEnvironment environment() override {
    auto environment = environment_;
    environment.clock["instances"] = session_.instances_json();
    return environment;
  }

 private:
  const Bounds& bounds_;
  std::string run_id_;
  runner::Session session_;
  runner::ScenarioRunner runner_;
  evidence::RunEnvironment environment_;
};

}  // namespace

std::unique_ptr<Engine> in_process_engine(const Bounds& bounds) { return std::make_unique<InProcessEngine>(bounds); }

std::unique_ptr<Engine> real_engine(const Bounds& bounds, const runner::StackOptions& services,
                                    const std::atomic<bool>* stop) {
  return std::make_unique<RealEngine>(bounds, services, stop);
}

}  // namespace skewbench::explore
