#include "sweep/sweep_summary.hpp"

#include "common/digest.hpp"
#include "common/files.hpp"
#include "common/json_reader.hpp"
#include "evidence/evidence.hpp"

namespace skewbench::sweep {
using nlohmann::json;

json resolved_grid(const Grid& grid) {
  // Per policy, the value each axis takes when it is not swept: the base
  // scenario's (with the policy applied), or null when the pointer is absent.
  json policies = json::array();
  for (const auto& p : grid.policies()) {
    json doc = grid.base_scenario();
    doc["policy"] = p.policy;
    json defaults = json::object();
    for (const auto& a : grid.axes()) {
      const json::json_pointer pointer(a.pointer);
      defaults[a.name] = doc.contains(pointer) ? doc[pointer] : json(nullptr);
    }
    policies.push_back({{"label", p.label}, {"policy", p.policy}, {"defaults", defaults}});
  }
  json axes = json::array();
  for (const auto& a : grid.axes()) {
    axes.push_back({{"name", a.name}, {"pointer", a.pointer}, {"values", a.values}, {"policies", a.policies}});
  }
  json maps = json::array();
  for (const auto& m : grid.maps()) maps.push_back({{"x", m.x}, {"y", m.y}});
  json marks = json::array();
  for (const auto& m : grid.marks()) marks.push_back({{"label", m.label}, {"policy", m.policy}, {"at", m.at}});
  return {{"id", grid.id()},
          {"policies", policies},
          {"axes", axes},
          {"maps", maps},
          {"marks", marks},
          {"cells_total", grid.cell_count()},
          {"identity_digest", grid.identity_digest()}};
}

json sweep_summary(const Grid& grid, const Shard& shard, const SweepOutcome& outcome, const json& environment,
                   const std::vector<std::string>& warnings, unsigned jobs) {
  return {{"schema_version", evidence::kSchemaVersion},
          {"kind", "sweep_summary"},
          {"engine", environment.is_object() ? environment.value("engine", "real") : "real"},
          {"grid_id", grid.id()},
          {"grid", resolved_grid(grid)},
          {"grid_document", grid.document()},
          {"base_scenario", grid.base_scenario()},
          {"base_scenario_digest", json_digest(grid.base_scenario())},
          {"shard", shard.whole() ? json(nullptr) : shard.to_json()},
          {"cells_total", grid.cell_count()},
          {"cells_planned", outcome.cells_planned},
          {"cells_done", outcome.cells_done},
          {"complete", outcome.cells_done == outcome.cells_planned},
          {"interrupted", outcome.interrupted},
          {"cells_reused", outcome.cells_reused},
          {"unreachable", outcome.unreachable ? json(*outcome.unreachable) : json(nullptr)},
          {"per_policy", outcome.per_policy},
          {"cells_core_digest", outcome.cells_core_digest},
          {"errors", outcome.errors},
          {"jobs", jobs},
          {"duration_s", outcome.duration_s},
          {"cells_per_s", outcome.duration_s > 0 ? static_cast<double>(outcome.cells_done) / outcome.duration_s : 0.0},
          {"environment", environment},
          {"warnings", warnings}};
}

json read_sweep_summary(const std::filesystem::path& dir) {
  const auto path = dir / "sweep.json";
  json doc;
  try {
    doc = parse_bounded_json(read_file(path));
  } catch (const std::exception& e) {
    throw std::runtime_error(path.string() + ": " + e.what());
  }
  if (!doc.is_object() || doc.value("kind", "") != "sweep_summary") {
    throw std::runtime_error(path.string() + " is not a skewbench sweep summary");
  }
  return doc;
}

}  // namespace skewbench::sweep
