#include "explore/bounds.hpp"

#include <algorithm>
#include <stdexcept>

#include "common/digest.hpp"
#include "common/files.hpp"
#include "common/json_reader.hpp"

namespace skewbench::explore {
namespace {

using nlohmann::json;

// The limit every time in a scenario lies within (docs/scenario-format.md).
constexpr std::int64_t kTimeLimitS = 1'000'000'000'000'000;
// Enough for any schedule worth shrinking; a bound above is a typo.
constexpr std::int64_t kMaxSteps = 64;
constexpr std::int64_t kMaxNodes = 16;

Range read_range(ObjectReader& parent, std::string_view key, Range fallback, std::int64_t lowest) {
  const json* value = parent.optional(key);
  if (!value) return fallback;
  ObjectReader reader(*value, parent.child_path(key));
  Range range;
  range.min_s = reader.require_int_within("min", lowest, kTimeLimitS);
  range.max_s = reader.require_int_within("max", lowest, kTimeLimitS);
  reader.finish();
  if (range.max_s < range.min_s) {
    throw InputError(reader.child_path("max"), "is below min (" + std::to_string(range.min_s) + ")");
  }
  return range;
}

std::vector<std::string> read_step_kinds(const json& value, const std::string& path) {
  if (!value.is_array()) throw InputError(path, "must be an array of step kinds");
  std::vector<std::string> kinds;
  for (std::size_t i = 0; i < value.size(); ++i) {
    const auto kind = expect_string(value[i], index_path(path, i));
    if (std::find(std::begin(kExplorableKinds), std::end(kExplorableKinds), kind) == std::end(kExplorableKinds)) {
      std::string known;
      for (const auto k : kExplorableKinds) known += (known.empty() ? "" : ", ") + std::string(k);
      throw InputError(index_path(path, i), "\"" + kind + "\" is not a step kind explore generates (" + known + ")");
    }
    if (std::find(kinds.begin(), kinds.end(), kind) != kinds.end()) {
      throw InputError(index_path(path, i), "\"" + kind + "\" is listed twice");
    }
    kinds.push_back(kind);
  }
  return kinds;
}

Invariant read_invariant(const json& value, const std::string& path) {
  ObjectReader reader(value, path);
  const auto name = reader.require_string("check");
  const auto kind = kInvariantKinds.parse(name);
  if (!kind) {
    throw InputError(reader.child_path("check"),
                     "\"" + name + "\" is not an invariant explore checks (" + kInvariantKinds.listed() + ")");
  }
  Invariant invariant{.kind = *kind, .policies = {}};
  if (const json* policies = reader.optional("policies")) {
    if (*kind != InvariantKind::at_most_one_effect && *kind != InvariantKind::at_most_one_effect_within_ttl) {
      throw InputError(reader.child_path("policies"),
                       "only at_most_one_effect and at_most_one_effect_within_ttl are held for some policies");
    }
    if (!policies->is_array()) throw InputError(reader.child_path("policies"), "must be an array of policy names");
    for (std::size_t i = 0; i < policies->size(); ++i) {
      invariant.policies.push_back(expect_string((*policies)[i], index_path(reader.child_path("policies"), i)));
    }
  }
  reader.finish();
  return invariant;
}

// An object of exactly an integer min and max: a range to draw from.
bool is_range(const json& value) {
  return value.is_object() && value.size() == 2 && value.contains("min") && value.contains("max") &&
         value["min"].is_number_integer() && value["max"].is_number_integer();
}

// The ranged fields of a policy object, in document order.
void find_ranges(const json& value, const json::json_pointer& at, const std::string& path,
                 std::vector<PolicyRange>& out) {
  if (!value.is_object()) return;
  for (const auto& item : value.items()) {
    const auto field = at / item.key();
    const auto field_path = path + "." + item.key();
    if (is_range(item.value())) {
      ObjectReader reader(item.value(), field_path);
      Range range{reader.require_int_within("min", -kTimeLimitS, kTimeLimitS),
                  reader.require_int_within("max", -kTimeLimitS, kTimeLimitS)};
      if (range.max_s < range.min_s) {
        throw InputError(field_path + ".max", "is below min (" + std::to_string(range.min_s) + ")");
      }
      out.push_back({.field = field, .range = range});
    } else {
      find_ranges(item.value(), field, field_path, out);
    }
  }
}

void read_policies(ObjectReader& reader, Bounds& bounds) {
  const auto& policies = reader.require_array("policies");
  if (policies.empty()) throw InputError(reader.child_path("policies"), "must name at least one policy");
  for (std::size_t i = 0; i < policies.size(); ++i) {
    const auto path = index_path(reader.child_path("policies"), i);
    ObjectReader policy(policies[i], path);
    policy.require_string("name");
    // The rest is the policy's own; the scenario parser checks it when the
    // bounds are checked against a generated scenario of each policy.
    for (const auto& item : policies[i].items()) policy.claim(item.key());
    bounds.policies.push_back(policies[i]);
    bounds.policy_ranges.emplace_back();
    find_ranges(policies[i], json::json_pointer(), path, bounds.policy_ranges.back());
  }
}

void read_invariants(ObjectReader& reader, Bounds& bounds) {
  const auto& invariants = reader.require_array("invariants");
  if (invariants.empty()) throw InputError(reader.child_path("invariants"), "must name at least one invariant");
  for (std::size_t i = 0; i < invariants.size(); ++i) {
    bounds.invariants.push_back(read_invariant(invariants[i], index_path(reader.child_path("invariants"), i)));
  }
}

}  // namespace

Bounds parse_bounds(const json& document, const std::string& source) {
  ObjectReader reader(document, "$");
  reader.claim("$schema");
  Bounds bounds;
  bounds.source = source;
  bounds.id = reader.require_string("id");
  bounds.description = reader.optional_string("description").value_or("");
  bounds.t0_s = reader.optional_int_within("t0_s", -kTimeLimitS, kTimeLimitS).value_or(bounds.t0_s);
  bounds.ttl_s = read_range(reader, "ttl_s", bounds.ttl_s, 1);
  bounds.clock_offset_s = read_range(reader, "clock_offset_s", bounds.clock_offset_s, -kTimeLimitS);
  bounds.step_gap_s = read_range(reader, "step_gap_s", bounds.step_gap_s, 0);
  if (const json* nodes = reader.optional("nodes")) {
    ObjectReader node_reader(*nodes, reader.child_path("nodes"));
    bounds.max_nodes = static_cast<std::size_t>(node_reader.require_int_within("max", 1, kMaxNodes));
    node_reader.finish();
  }
  {
    ObjectReader steps(reader.require_object("steps"), reader.child_path("steps"));
    bounds.max_steps = static_cast<std::size_t>(steps.require_int_within("max", 0, kMaxSteps));
    bounds.step_kinds = read_step_kinds(steps.require("kinds"), steps.child_path("kinds"));
    if (bounds.step_kinds.empty() && bounds.max_steps > 0) {
      throw InputError(steps.child_path("kinds"), "names no step kind, but max is " + std::to_string(bounds.max_steps));
    }
    steps.finish();
  }
  if (const json* remote = reader.optional("remote")) {
    // The scenario parser checks it, with the rest of a generated scenario,
    // when the bounds are checked.
    if (!remote->is_object()) throw InputError(reader.child_path("remote"), "must be an object, as a scenario's");
    bounds.remote = *remote;
  }
  read_policies(reader, bounds);
  read_invariants(reader, bounds);
  reader.finish();
  bounds.digest = json_digest(document);
  return bounds;
}

Bounds load_bounds(const std::filesystem::path& path) {
  return parse_bounds(parse_json_text(read_file(path)), path.string());
}

}  // namespace skewbench::explore
