#pragma once

// A sweep grid: a base scenario, a list of policies, and axes that each set one
// value in the scenario document (by JSON Pointer). Every cell of the grid is a
// full scenario run on the real stack; nothing is evaluated by formula.
// The format is documented in docs/sweeps.md and schemas/grid.schema.json.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "scenario/scenario.hpp"

namespace skewbench::sweep {

struct PolicyEntry {
  std::string label;      // unique within the grid; defaults to the policy name
  nlohmann::json policy;  // as in a scenario's "policy"
};

struct Axis {
  std::string name;
  std::string pointer;  // JSON Pointer into the scenario document
  std::vector<nlohmann::json> values;
  std::vector<std::string> policies;  // policy names it applies to; empty = all
  std::string description;            // what the axis means, for a reader; optional

  bool applies_to(const std::string& policy_name) const;
};

struct HeatMap {
  std::string x;  // axis names
  std::string y;
};

// A point drawn on the maps, e.g. a published #018 point.
struct Mark {
  std::string label;
  std::string policy;  // a policy label
  nlohmann::json at;   // axis name -> value
};

struct Cell {
  std::uint64_t index = 0;
  std::size_t policy_index = 0;
  nlohmann::json parameters;  // every axis name -> value, null where the axis does not apply
};

class Grid {
 public:
  // Throws scenario::ScenarioFileError naming the grid file (or the base
  // scenario) and the JSON path.
  static Grid load(const std::filesystem::path& path);
  static Grid parse(const nlohmann::json& document, const std::string& source, const std::filesystem::path& base_dir);

  const std::string& id() const { return id_; }
  const nlohmann::json& document() const { return document_; }
  const nlohmann::json& base_scenario() const { return base_scenario_; }
  const std::vector<PolicyEntry>& policies() const { return policies_; }
  const std::vector<Axis>& axes() const { return axes_; }
  const std::vector<HeatMap>& maps() const { return maps_; }
  const std::vector<Mark>& marks() const { return marks_; }

  std::uint64_t cell_count() const { return total_cells_; }
  // Cells are numbered policy by policy, axes varying last-fastest.
  Cell cell(std::uint64_t index) const;
  // The scenario document a cell runs: the base with the cell's policy and
  // axis values, its id "cell-<index>", and no expectations.
  nlohmann::json cell_document(const Cell& cell) const;
  scenario::Scenario cell_scenario(const Cell& cell) const;

  // The step kinds of any cell whose outcome depends on the remote's
  // service-wide state (scenario::Scenario::service_wide_reader_kinds), over
  // the base and every axis value: such cells must not share a remote while
  // they run (docs/sweeps.md, "Isolation").
  const std::vector<std::string>& service_wide_reader_kinds() const { return service_wide_readers_; }

  // SHA-256 over what makes two sweeps cell-by-cell comparable: the policy
  // labels and names, and the axes (names, pointers, values, scope).
  std::string identity_digest() const;

 private:
  void count_cells();
  void check_every_value();
  // Returns the cell's scenario, which must be valid.
  scenario::Scenario check_value(std::size_t policy, std::size_t axis, std::size_t value) const;
  void note_readers(const scenario::Scenario& cell);

  std::string id_;
  std::string source_;
  nlohmann::json document_;
  nlohmann::json base_scenario_;
  std::vector<PolicyEntry> policies_;
  std::vector<Axis> axes_;
  std::vector<HeatMap> maps_;
  std::vector<Mark> marks_;
  std::vector<std::uint64_t> first_cell_of_policy_;
  std::uint64_t total_cells_ = 0;
  std::vector<std::string> service_wide_readers_;
};

}  // namespace skewbench::sweep
