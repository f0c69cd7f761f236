#include "app/targets.hpp"

#include <filesystem>
#include <set>

#include "app/run.hpp"
#include "common/errors.hpp"
#include "common/files.hpp"
#include "common/text.hpp"
#include "runner/session.hpp"
#include "targets/target.hpp"

namespace skewbench::app {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Passes a run's lines on, each after the target's name.
class TargetObserver final : public Observer {
 public:
  TargetObserver(Observer& inner, std::string name) : inner_(inner), name_(std::move(name)) {}
  void say(const std::string& line) override { inner_.say(name_ + ": " + line); }
  void entering(Phase phase) override { inner_.entering(phase); }

 private:
  Observer& inner_;
  std::string name_;
};

// What a run needs before anything starts: the targets, the scenarios, the
// table to hold the rows against, and every target's installed needs.
struct Inputs {
  std::vector<targets::Target> targets;
  std::vector<scenario::Scenario> scenarios;
  std::vector<targets::ExpectedRow> expected;
};

std::optional<Inputs> read_inputs(const TargetsRequest& request, Observer& observer) {
  Inputs in;
  try {
    if (request.names.empty()) {
      in.targets = targets::load_targets(request.targets_dir);
    } else {
      for (const auto& name : request.names) in.targets.push_back(targets::load_target(name, request.targets_dir));
    }
    if (request.scenario_paths == TargetsRequest{}.scenario_paths &&
        !std::filesystem::exists(request.scenario_paths.front())) {
      observer.say("there is no " + request.scenario_paths.front() + " in " + std::filesystem::current_path().string() +
                   ": run skewbench targets from skewbench's folder, which holds the series, or name it with "
                   "--scenarios");
      return std::nullopt;
    }
    in.scenarios = runner::load_scenarios(request.scenario_paths);
  } catch (const std::exception& e) {
    observer.say(e.what());
    return std::nullopt;
  }
  try {
    if (request.expect_file) in.expected = targets::read_expected_table(read_file(*request.expect_file));
  } catch (const std::exception& e) {
    observer.say("--expect " + *request.expect_file + ": " + e.what());
    return std::nullopt;
  }
  bool complete = true;
  for (const auto& target : in.targets) {
    for (const auto& missing : targets::missing_needs(target)) {
      observer.say(missing);
      complete = false;
    }
  }
  if (!complete) return std::nullopt;
  return in;
}

// Why the run may not write into --out, before anything starts: findings.md,
// findings.json and each target's folder are replaced only with
// --overwrite, and none may be (or lie behind) a symbolic link.
std::optional<std::string> out_problem(const TargetsRequest& request, const std::vector<targets::Target>& targets) {
  const fs::path out_dir = request.out_dir;
  std::vector<std::string> existing;
  std::error_code ec;
  for (const char* name : {"findings.md", "findings.json"}) {
    if (auto problem = output_path_problem(out_dir, name)) return problem;
    if (fs::exists(out_dir / name, ec)) existing.push_back((out_dir / name).string());
  }
  for (const auto& target : targets) {
    // A run's own --out rules (artifacts/out_folder.hpp) judge what is inside.
    const auto folder = out_dir / target.name;
    const auto status = fs::symlink_status(folder, ec);
    if (!fs::exists(status)) continue;
    if (!fs::is_directory(status)) return folder.string() + " is a symbolic link or a file, not a folder";
    if (!fs::is_empty(folder, ec)) existing.push_back(folder.string());
  }
  if (existing.empty() || request.overwrite) return std::nullopt;
  return text::join(existing, ", ") + (existing.size() == 1 ? " exists" : " exist") +
         " (an earlier run's findings or evidence); pass --overwrite to replace them, or another --out";
}

// Why `target` cannot run `s`, or nothing when it can.
std::optional<std::string> not_runnable(const targets::Target& target, const scenario::Scenario& s) {
  if (!target.store && !s.kinds_that(&steps::StepNeeds::store_control).empty()) {
    return "the target has no store process to restart";
  }
  if (!target.own_wire && !s.kinds_that(&steps::StepNeeds::provider_control).empty()) {
    return "the service performs its effect itself, not through a provider call to skewbench's effect sink, where "
           "requests in flight are held and counted";
  }
  if (target.own_wire) {
    // What runner::own_wire_problem refuses in a run, a row of its own here.
    if (target.ttl_s && s.ttl_s != *target.ttl_s) {
      return "the service keeps records for " + std::to_string(*target.ttl_s) + " s, the scenario's TTL is " +
             std::to_string(s.ttl_s) + " s";
    }
    if (s.dedupe_mode) return "the service's dedupe memory is its own and cannot be switched";
    if (!s.kinds_that(&steps::StepNeeds::reads_service_wide_state).empty()) {
      return "the scenario needs skewbench's protocol (gc, the temporal fence)";
    }
    if (!infra::carries_amount(*target.own_wire) && !s.kinds_that(&steps::StepNeeds::sends_another_amount).empty()) {
      return "the target's request carries no {amount}: a POST of another amount would send the same body";
    }
  }
  return std::nullopt;
}

// The rows of one target: its run's evidence for what it ran, n/a for the rest.
std::vector<targets::FindingRow> rows_of(const targets::Target& target, const std::vector<scenario::Scenario>& all,
                                         const fs::path& out_dir, bool published) {
  std::vector<targets::FindingRow> rows;
  for (const auto& s : all) {
    if (const auto why = not_runnable(target, s)) {
      rows.push_back(targets::not_applicable(target.name, s.id, *why));
      continue;
    }
    const auto relative = fs::path(target.name) / "scenarios" / (s.id + ".json");
    if (!published) {
      auto row = targets::not_applicable(target.name, s.id, "the run's evidence was not written");
      row.verdict = "ERROR";
      rows.push_back(std::move(row));
      continue;
    }
    try {
      rows.push_back(
          targets::finding_of(target.name, parse_json_text(read_file(out_dir / relative)), relative.string()));
    } catch (const std::exception& e) {
      auto row = targets::not_applicable(target.name, s.id, std::string("no evidence: ") + e.what());
      row.verdict = "ERROR";
      rows.push_back(std::move(row));
    }
  }
  targets::qualify_across_instances(rows);
  return rows;
}

// findings.json and findings.md beside the targets' folders.
void write_findings(const fs::path& out_dir, const std::vector<targets::Target>& ran, const TargetsOutcome& outcome) {
  json document = {{"targets", json::array()}, {"rows", json::array()}, {"differences", outcome.differences}};
  for (const auto& t : ran) document["targets"].push_back(t.to_json());
  for (const auto& row : outcome.rows) document["rows"].push_back(row.to_json());
  write_file_atomically(out_dir / "findings.json", document.dump(2) + "\n");
  write_file_atomically(out_dir / "findings.md",
                        targets::findings_markdown(outcome.rows, outcome.expected, outcome.differences));
}

}  // namespace

std::optional<runner::StackOptions> services_of_target(const std::string& name_or_path, const std::string& targets_dir,
                                                       runner::StackOptions services, Observer& observer) {
  const auto refuse = [&](const std::string& why) {
    observer.say("--target " + name_or_path + ": " + why);
    return std::nullopt;
  };
  if (services.engine == infra::Engine::in_process) {
    return refuse(
        "a target's service runs as a process of its own, which --engine in-process does not start "
        "(docs/engines.md); use --engine real");
  }
  if (services.remote_url) return refuse("the target's service is started by skewbench; drop --remote-url");
  if (services.remote_command) return refuse("the target names its own service; drop --remote-command");
  if (services.clock_mode_given && services.clock_mode == runner::ClockMode::logical) {
    return refuse("a target's service reads its own wall clock; drop --clock-mode logical");
  }
  try {
    const auto target = targets::load_target(name_or_path, targets_dir);
    const auto missing = targets::missing_needs(target);
    for (const auto& line : missing) observer.say(line);
    if (!missing.empty()) return std::nullopt;
    targets::use_target(target, services);
  } catch (const std::exception& e) {
    return refuse(e.what());
  }
  return services;
}

TargetsOutcome run_targets(const TargetsRequest& request, const std::atomic<bool>& stop, Observer& observer) {
  TargetsOutcome outcome;
  auto inputs = read_inputs(request, observer);
  if (!inputs) return {.exit_code = exit_code::kUsage, .rows = {}, .expected = {}, .differences = {}};
  outcome.expected = inputs->expected;
  const fs::path out_dir = request.out_dir;
  if (const auto problem = out_problem(request, inputs->targets)) {
    observer.say("--out " + request.out_dir + ": " + *problem);
    return {.exit_code = exit_code::kUsage, .rows = {}, .expected = {}, .differences = {}};
  }
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) {
    observer.say("--out " + request.out_dir + ": " + ec.message());
    return {.exit_code = exit_code::kUsage, .rows = {}, .expected = {}, .differences = {}};
  }
  int worst = exit_code::kPass;
  std::set<std::string> ran;
  for (const auto& target : inputs->targets) {
    if (stop.load()) return {.exit_code = exit_code::kInterrupted, .rows = {}, .expected = {}, .differences = {}};
    RunRequest run{.paths = {},
                   .out_dir = (out_dir / target.name).string(),
                   .services = request.services,
                   .overwrite = request.overwrite};
    for (const auto& s : inputs->scenarios) {
      if (!not_runnable(target, s)) run.paths.push_back(s.source);
    }
    TargetObserver target_observer(observer, target.name);
    target_observer.say("running " + std::to_string(run.paths.size()) + " scenarios against " + target.library);
    try {
      targets::use_target(target, run.services);
    } catch (const std::exception& e) {
      observer.say(target.name + ": " + e.what());
      return {.exit_code = exit_code::kUsage, .rows = {}, .expected = {}, .differences = {}};
    }
    const auto result = run.paths.empty() ? RunOutcome{} : app::run(run, stop, target_observer);
    if (result.exit_code == exit_code::kUsage || result.exit_code == exit_code::kInterrupted) {
      return {.exit_code = result.exit_code, .rows = {}, .expected = {}, .differences = {}};
    }
    worst = std::max(worst, result.exit_code);
    ran.insert(target.name);
    // Without published evidence (it could not be written) the folder may hold
    // an earlier run's: every row of this one is then ERROR, never an old row.
    const bool published = run.paths.empty() || result.report.has_value();
    for (auto& row : rows_of(target, inputs->scenarios, out_dir, published)) outcome.rows.push_back(std::move(row));
  }
  if (request.expect_file) outcome.differences = targets::differences(outcome.rows, outcome.expected, ran);
  if (!outcome.differences.empty()) worst = std::max(worst, exit_code::kExpectationFailed);
  write_findings(out_dir, inputs->targets, outcome);
  outcome.exit_code = worst;
  return outcome;
}

}  // namespace skewbench::app
