#include "scenario/scenario.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <stdexcept>
#include <string_view>

#include "common/files.hpp"
#include "common/text.hpp"
#include "scenario/verdict.hpp"

namespace skewbench::scenario {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// [A-Za-z0-9][A-Za-z0-9._-]{0,63}, checked by hand: a sweep parses a
// scenario per cell, and std::regex took a tenth of an in-process cell.
bool is_id(std::string_view value) {
  const auto alnum = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (value.empty() || value.size() > 64 || !alnum(value.front())) return false;
  return std::all_of(value.begin() + 1, value.end(),
                     [&alnum](char c) { return alnum(c) || c == '.' || c == '_' || c == '-'; });
}

void require_id(const std::string& value, const std::string& path) {
  if (!is_id(value)) {
    throw InputError(path, "\"" + value + "\" must match [A-Za-z0-9][A-Za-z0-9._-]{0,63}");
  }
}

// The verdicts a file may expect: every one but ERROR.
std::vector<std::string> expectable_verdicts() {
  std::vector<std::string> out;
  for (const auto verdict : kAllVerdicts) {
    if (verdict != Verdict::Error) out.emplace_back(to_string(verdict));
  }
  return out;
}

steps::ObservedFields make_final_fields() {
  using steps::FieldType;
  return {
      {"effect_count", {FieldType::Integer, {}}},
      {"post_requests", {FieldType::Integer, {}}},
      {"ack_drops", {FieldType::Integer, {}}},
      {"active_idempotency_records", {FieldType::Integer, {}}},
      {"status", {FieldType::String, remote_effect::kOperationStatuses.names()}},
      {"outbox_status", {FieldType::String, infra::kOutboxStatuses.names()}},
      {"delivery_attempts", {FieldType::Integer, {}}},
      {"business_state", {FieldType::String, infra::kBusinessStates.names()}},
      {"verdict", {FieldType::String, expectable_verdicts()}},
      {"idempotency_mode", {FieldType::NullableString, remote_effect::kDedupeModes.names()}},
      {"durable_idempotency_records", {FieldType::NullableInteger, {}}},
  };
}

void read_expectations(const json& expect, const std::string& path, const steps::ObservedFields& fields, int step_index,
                       const std::string& id_prefix, std::vector<Expectation>& out) {
  ObjectReader reader(expect, path);
  for (const auto& [key, value] : expect.items()) {
    const auto field = fields.find(key);
    if (field == fields.end()) {
      std::vector<std::string> known;
      for (const auto& [name, _] : fields) known.push_back(name);
      throw InputError(reader.child_path(key),
                       "cannot be expected here (observed fields: " + text::join(known, ", ") + ")");
    }
    steps::validate_expected_value(field->second, value, reader.child_path(key));
    out.push_back({id_prefix + "." + key, step_index, key, value});
  }
}

// The kinds registered for `role`, as a message names them: "a or b".
std::string playing(steps::StepRole role) {
  return text::join(steps::kinds_playing(steps::builtin_steps(), role), " or ");
}

// Structural rules no single step can check: the operation is committed once,
// before it is delivered, recovery follows a delivery attempt, and a provider
// call held is released by a later step (or ends with its node's instance). The rules
// follow the steps' roles, so a new delivery or recovery kind obeys them too.
void check_step_order(const std::vector<ScenarioStep>& steps_list) {
  using steps::StepRole;
  bool committed = false;
  bool posted = false;
  // Per node: the first step that left a provider call held, not yet released.
  std::map<std::string, std::size_t> holding;
  for (std::size_t i = 0; i < steps_list.size(); ++i) {
    const auto& step = *steps_list[i].step;
    const auto kind = std::string(step.kind());
    const auto role = step.role();
    const auto path = index_path("$.steps", i) + ".kind";
    if (step.needs().releases_provider_calls) holding.clear();
    if (step.needs().ends_node_in_flight) holding.erase(step.node().value_or(""));
    if (step.needs().holds_provider_call) holding.emplace(step.node().value_or(""), i);
    if (role == StepRole::Setup) {
      if (committed) throw InputError(path, "the operation is already committed by an earlier step");
      committed = true;
    } else if (step.needs().follows_delivery) {
      if (!posted) throw InputError(path, kind + " needs an earlier " + playing(StepRole::Delivery) + " step");
    } else if (role == StepRole::Delivery || role == StepRole::Recovery) {
      if (!committed) throw InputError(path, kind + " needs an earlier " + playing(StepRole::Setup) + " step");
      if (role == StepRole::Recovery && !posted) {
        throw InputError(path, kind + " needs an earlier " + playing(StepRole::Delivery) + " step");
      }
      posted = posted || role == StepRole::Delivery;
    }
  }
  if (!holding.empty()) {
    const auto first = std::min_element(holding.begin(), holding.end(), [](const auto& a, const auto& b) {
                         return a.second < b.second;
                       })->second;
    throw InputError(index_path("$.steps", first) + ".kind",
                     std::string(steps_list[first].step->kind()) +
                         " leaves a provider call held: a later step must release it (release_provider), or kill "
                         "its node's instance (kill_instance)");
  }
}

// $.report_as names a section as "<section>" (#018) or "<benchmark>:<section>";
// which sections exist is the published layer's to say (app and check refuse
// one that names none).
void require_report_section_name(const std::string& value) {
  const auto colon = value.find(':');
  const bool benchmark_ok =
      colon == std::string::npos ||
      (colon == 3 && std::all_of(value.begin(), value.begin() + 3, [](char c) { return c >= '0' && c <= '9'; }));
  if (!benchmark_ok ||
      !is_id(colon == std::string::npos ? std::string_view(value) : std::string_view(value).substr(4))) {
    throw InputError("$.report_as", "\"" + value + "\" must be a section name, or \"<benchmark>:<section>\"");
  }
}

// $.operation: the operation's published name and the retry identity.
steps::OperationSettings read_operation(ObjectReader& root, const std::string& scenario_id) {
  steps::OperationSettings op;
  op.name = scenario_id;
  const auto* spec = root.optional("operation");
  if (spec == nullptr) {
    op.minted_key_prefix = op.name;
    return op;
  }
  ObjectReader reader(*spec, "$.operation");
  op.name = reader.require_string("name");
  require_id(op.name, "$.operation.name");
  if (const auto identity = reader.optional_string("retry_identity")) {
    const auto parsed = steps::kRetryIdentities.parse(*identity);
    if (!parsed) {
      throw InputError("$.operation.retry_identity",
                       "\"" + *identity + "\" is not one of: " + text::join(steps::kRetryIdentities.names(), ", "));
    }
    op.retry_identity = *parsed;
  }
  op.minted_key_prefix = reader.optional_string("minted_key_prefix").value_or(op.name);
  // The commit writes version + 1.
  op.initial_business_version = reader.optional_int_within("initial_business_version", 0, INT64_MAX - 1).value_or(0);
  require_id(op.minted_key_prefix, "$.operation.minted_key_prefix");
  reader.finish();
  return op;
}

// A word of `vocabulary` at `key` of `reader`, if present; throws InputError
// naming the allowed words.
template <typename Vocabulary>
auto optional_word(ObjectReader& reader, const std::string& key, const Vocabulary& vocabulary)
    -> decltype(vocabulary.parse("")) {
  const auto word = reader.optional_string(key);
  if (!word) return std::nullopt;
  const auto parsed = vocabulary.parse(*word);
  if (!parsed) {
    throw InputError(reader.child_path(key),
                     "\"" + *word + "\" is not one of: " + text::join(vocabulary.names(), ", "));
  }
  return parsed;
}

// $.remote: what the scenario needs of the remote service: its dedupe memory,
// how many instances the nodes reach, and whose clock each judges by. Read
// after the nodes and the policy, which the clock must agree with.
void read_remote(ObjectReader& root, Scenario& s) {
  const auto* spec = root.optional("remote");
  if (spec == nullptr) return;
  ObjectReader reader(*spec, "$.remote");
  s.dedupe_mode = optional_word(reader, "dedupe", remote_effect::kDedupeModes);
  s.service.instances = optional_word(reader, "instances", kInstanceLayouts).value_or(InstanceLayout::one);
  s.service.clock = optional_word(reader, "clock", kServiceClocks).value_or(ServiceClock::request);
  s.service.store_node = reader.optional_string("store_node");
  if (s.service.store_node && std::none_of(s.nodes.begin(), s.nodes.end(), [&](const time::NodeClock& n) {
        return n.node_id == *s.service.store_node;
      })) {
    throw InputError("$.remote.store_node", "unknown node \"" + *s.service.store_node + "\" (declare it in $.nodes)");
  }
  if (s.service.clock == ServiceClock::node && s.service.instances != InstanceLayout::per_node) {
    throw InputError("$.remote.clock",
                     "\"node\" needs \"instances\": \"per_node\" (one instance shared by every node has no node "
                     "clock of its own)");
  }
  if (s.service.clock == ServiceClock::authority && s.policy->authority() == nullptr) {
    throw InputError("$.remote.clock", "\"authority\" needs a policy that declares one (declared_authority), not " +
                                           std::string(s.policy->name()));
  }
  reader.finish();
}

// $.nodes: at least one, each id declared once.
std::vector<time::NodeClock> read_nodes(ObjectReader& root, std::set<std::string>& node_ids) {
  const auto& nodes = root.require_array("nodes");
  if (nodes.empty()) throw InputError("$.nodes", "must declare at least one node");
  std::vector<time::NodeClock> out;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    ObjectReader node(nodes[i], index_path("$.nodes", i));
    time::NodeClock clock{
        node.require_string("id"),
        node.require_int_within("clock_offset_s", -time::kMaxLogicalSeconds, time::kMaxLogicalSeconds)};
    require_id(clock.node_id, node.child_path("id"));
    if (!node_ids.insert(clock.node_id).second) {
      throw InputError(node.child_path("id"), "node \"" + clock.node_id + "\" is declared twice");
    }
    node.optional_string("description");
    node.finish();
    out.push_back(std::move(clock));
  }
  return out;
}

// Step i of $.steps, of a registered kind, not before the step that precedes
// it; its "expect" goes into `expectations`.
ScenarioStep read_step(const json& input, std::size_t i, const steps::StepParseContext& parse_context,
                       std::optional<LogicalSeconds>& previous_at_s, std::vector<Expectation>& expectations) {
  const auto& registry = steps::builtin_steps();
  ObjectReader spec(input, index_path("$.steps", i));
  const auto kind_name = spec.require_string("kind");
  const auto* kind = registry.find(kind_name);
  if (kind == nullptr) {
    throw InputError(spec.child_path("kind"),
                     "unknown step kind \"" + kind_name + "\" (known: " + registry.known_names() + ")");
  }
  const auto at_s = spec.require_int_within("at_s", -time::kMaxLogicalSeconds, time::kMaxLogicalSeconds);
  if (previous_at_s && at_s < *previous_at_s) {
    throw InputError(spec.child_path("at_s"), "reference time goes backwards (" + std::to_string(at_s) + " after " +
                                                  std::to_string(*previous_at_s) +
                                                  "); to move a node's clock back use " +
                                                  playing(steps::StepRole::ClockChange));
  }
  previous_at_s = at_s;
  spec.optional_string("description");
  ScenarioStep step;
  step.step = kind->factory(spec, at_s, parse_context);
  if (step.step->role() != kind->role) {
    throw std::logic_error("step kind " + kind_name + " plays another role than it was registered with");
  }
  step.input = input;
  if (const auto* expect = spec.optional("expect")) {
    read_expectations(*expect, spec.child_path("expect"), kind->observed, static_cast<int>(i), index_path("steps", i),
                      expectations);
  }
  spec.finish();
  return step;
}

Scenario parse_document(const json& doc, const std::string& source) {
  Scenario s;
  s.document = doc;
  s.source = source;
  ObjectReader root(doc, "$");
  root.optional_string("$schema");
  s.id = root.require_string("id");
  require_id(s.id, "$.id");
  s.description = root.require_string("description");
  s.report_as = root.optional_string("report_as");
  if (s.report_as) require_report_section_name(*s.report_as);
  s.operation = read_operation(root, s.id);
  s.t0_s = root.require_int_within("t0_s", -time::kMaxLogicalSeconds, time::kMaxLogicalSeconds);
  s.ttl_s = root.require_int_within("ttl_s", 1, time::kMaxLogicalSeconds);
  std::set<std::string> node_ids;
  s.nodes = read_nodes(root, node_ids);
  s.policy = policy::builtin_policies().make(root.require_object("policy"), "$.policy");
  read_remote(root, s);

  const auto& step_list = root.require_array("steps");
  if (step_list.empty()) throw InputError("$.steps", "must list at least one step");
  std::optional<LogicalSeconds> previous_at_s;
  const steps::StepParseContext parse_context{node_ids};
  for (std::size_t i = 0; i < step_list.size(); ++i) {
    s.steps.push_back(read_step(step_list[i], i, parse_context, previous_at_s, s.expectations));
  }
  check_step_order(s.steps);

  read_expectations(root.require_object("expect"), "$.expect", final_fields(), -1, "final", s.expectations);
  root.finish();
  return s;
}

}  // namespace

std::size_t Scenario::instance_of(const std::optional<std::string>& node_id) const {
  if (service.instances != InstanceLayout::per_node || !node_id) return 0;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].node_id == *node_id) return i;
  }
  throw std::logic_error("instance_of: no node " + *node_id);
}

bool Scenario::needs_remote_control() const {
  return std::any_of(steps.begin(), steps.end(), [](const ScenarioStep& s) { return s.step->needs().remote_control; });
}

bool Scenario::needs_database_control() const {
  return std::any_of(steps.begin(), steps.end(),
                     [](const ScenarioStep& s) { return s.step->needs().database_control; });
}

std::vector<std::string> Scenario::kinds_that(bool steps::StepNeeds::*need) const {
  std::vector<std::string> kinds;
  for (const auto& s : steps) {
    const std::string kind(s.step->kind());
    if (s.step->needs().*need && std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) kinds.push_back(kind);
  }
  return kinds;
}

const steps::ObservedFields& final_fields() {
  static const steps::ObservedFields fields = make_final_fields();
  return fields;
}

Scenario parse_scenario(const json& document, const std::string& source) {
  try {
    return parse_document(document, source);
  } catch (const InputError& e) {
    throw ScenarioFileError(source, e.json_path(), e.message());
  }
}

Scenario load_scenario_file(const fs::path& path) {
  std::string text;
  try {
    text = read_file(path);
  } catch (const std::exception& e) {
    throw ScenarioFileError(path.string(), "$", e.what());
  }
  try {
    return parse_scenario(parse_json_text(text), path.string());
  } catch (const InputError& e) {
    throw ScenarioFileError(path.string(), e.json_path(), e.message());
  }
}

std::vector<fs::path> collect_scenario_files(const std::vector<std::string>& paths) {
  std::vector<fs::path> out;
  for (const auto& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<fs::path> found;
      // Every *.json that is not a folder: a link or a FIFO among them is
      // refused by read_file's rule, by name, not skipped in silence.
      for (const auto& entry : fs::directory_iterator(p)) {
        if (!fs::is_directory(entry.symlink_status()) && entry.path().extension() == ".json") {
          found.push_back(entry.path());
        }
      }
      std::sort(found.begin(), found.end());
      if (found.empty()) throw ScenarioFileError(p, "$", "directory holds no *.json scenario files");
      out.insert(out.end(), found.begin(), found.end());
    } else if (fs::exists(fs::symlink_status(p, ec))) {
      out.emplace_back(p);  // read_file judges what it is
    } else {
      throw ScenarioFileError(p, "$", "no such file or directory");
    }
  }
  return out;
}

}  // namespace skewbench::scenario
