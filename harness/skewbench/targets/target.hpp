#pragma once

// The targets layer: the idempotency libraries and services people run, put
// under the series as data. A target is a folder under targets/ holding a
// target.json: what it puts under test, what it needs installed, how to start
// an instance of its effect service and its backing store. skewbench runs a
// target the way it runs remote-effect with --remote-command, on real clocks
// (every instance and the store under libfaketime) and with ack loss by its
// fault proxy. docs/targets.md describes the file and the findings.

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "infra/effect_sink.hpp"
#include "infra/own_wire_remote.hpp"
#include "infra/process_clock.hpp"
#include "infra/store_process.hpp"
#include "remote_effect/launcher.hpp"
#include "runner/stack.hpp"

namespace skewbench::targets {

// A target file that cannot be used (exit 2); the message names the file and
// the JSON path.
class TargetFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What a target's (and its store's) name may be: its folder's name.
inline constexpr std::string_view kTargetNamePattern = "[a-z0-9][a-z0-9._-]{0,63}";
bool is_target_name(std::string_view name);

struct Target {
  std::string name;           // $.name, which is its folder's name
  std::string description;    // what it is, in a sentence
  std::string library;        // the library (and version) under test
  std::filesystem::path dir;  // its folder, absolute
  std::string install;        // how to install what it needs, said when something is missing
  // Commands that must be on PATH, and files (an entry holding '/') relative
  // to its folder that must exist.
  std::vector<std::string> needs;
  // $.service.command as written: the stack fills in {target_dir}, {port},
  // {state_db}, {dedupe}, {host}, {store_port}, {store_dir} and
  // {remote_effect} (the remote-effect binary found as skewbench finds it),
  // and for a service of its own wire {sink_url} and {ttl_s}, in one pass.
  std::string service_command;
  std::map<std::string, std::string> service_env;
  std::optional<infra::StoreOptions> store;
  std::filesystem::path file;  // the target.json read
  int schema_version = 1;      // $.schema_version: 1 when absent (the first form, still read)
  // A service of its own wire ($.service.wire "own", schema version 2): how a
  // scenario's POST goes ($.request), how its answer reads ($.answer), where
  // a call to the effect sink carries the operation id ($.sink), how it shows
  // it is ready ($.service.ready) and the TTL it is configured with
  // ($.service.ttl_s, its command's {ttl_s}). Unset: it speaks skewbench's
  // protocol, and is ready when its GET /health says so.
  std::optional<infra::OwnWire> own_wire;
  infra::OperationIdSource sink_operation_id;
  remote_effect::Readiness ready;
  // How long an instance may take to be ready ($.service.ready_timeout_s).
  std::chrono::seconds ready_timeout{10};
  // How an instance is stopped and restarted ($.service.stop, $.service.restart).
  remote_effect::Stopping stopping;
  std::optional<std::int64_t> ttl_s;
  // The library that moves each instance's wall clock ($.service.wall_clock).
  infra::ClockLibrary wall_clock = infra::ClockLibrary::libfaketime;

  // What the evidence records of it: name, library, description, file.
  nlohmann::json to_json() const;
};

// The target `name_or_path` names: a folder or target.json when it holds a
// '/', else the folder of that name under `targets_dir`. Throws
// TargetFileError.
Target load_target(const std::string& name_or_path, const std::filesystem::path& targets_dir);

// Every target under `targets_dir` (each folder holding a target.json), by
// name. Throws TargetFileError.
std::vector<Target> load_targets(const std::filesystem::path& targets_dir);

// What the target needs that this machine does not have, one line each
// naming it and how to install it; empty when nothing is missing.
std::vector<std::string> missing_needs(const Target& target);

// The services of a run against `target`: its service in place of
// remote-effect, its store, on real clocks, and ack loss by the fault proxy
// unless the caller chose otherwise. Throws InfrastructureError when
// {remote_effect} is used and no remote-effect can be found.
void use_target(const Target& target, runner::StackOptions& services);

}  // namespace skewbench::targets
