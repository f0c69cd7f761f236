#include "report/slices.hpp"

#include <algorithm>
#include <fstream>

#include "common/files.hpp"
#include "common/json_reader.hpp"

namespace skewbench::report {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::vector<std::string> read_strings(const json& array, const std::string& path) {
  if (!array.is_array()) throw InputError(path, "expected an array, got " + std::string(json_type_name(array)));
  std::vector<std::string> out;
  for (std::size_t i = 0; i < array.size(); ++i) out.push_back(expect_string(array[i], index_path(path, i)));
  return out;
}

PolicyInfo read_policy(const json& value, const std::string& path) {
  ObjectReader r(value, path);
  PolicyInfo p;
  p.label = r.require_string("label");
  p.policy = r.require_object("policy");
  p.name = ObjectReader(p.policy, r.child_path("policy")).require_string("name");
  p.defaults = r.require_object("defaults");
  return p;
}

AxisInfo read_axis(const json& value, const std::string& path) {
  ObjectReader r(value, path);
  AxisInfo a;
  a.name = r.require_string("name");
  a.pointer = r.optional_string("pointer").value_or("");
  const auto& values = r.require_array("values");
  if (values.empty()) throw InputError(r.child_path("values"), "expected at least one value");
  a.values.assign(values.begin(), values.end());
  a.policies = read_strings(r.require("policies"), r.child_path("policies"));
  return a;
}

void read_grid(const json& value, SweepInfo& info) {
  ObjectReader grid(value, "$.grid");
  info.grid_id = grid.require_string("id");
  info.identity_digest = grid.optional_string("identity_digest").value_or("");
  const auto& policies = grid.require_array("policies");
  for (std::size_t i = 0; i < policies.size(); ++i) {
    info.policies.push_back(read_policy(policies[i], index_path("$.grid.policies", i)));
  }
  const auto& axes = grid.require_array("axes");
  for (std::size_t i = 0; i < axes.size(); ++i) info.axes.push_back(read_axis(axes[i], index_path("$.grid.axes", i)));
  const auto& maps = grid.require_array("maps");
  for (std::size_t i = 0; i < maps.size(); ++i) {
    ObjectReader m(maps[i], index_path("$.grid.maps", i));
    info.maps.push_back({m.require_string("x"), m.require_string("y")});
    for (const auto* name : {&info.maps.back().x, &info.maps.back().y}) {
      const bool known =
          std::any_of(info.axes.begin(), info.axes.end(), [&](const auto& a) { return a.name == *name; });
      if (!known) throw InputError(m.path(), "no axis named \"" + *name + "\"");
    }
  }
  const auto& marks = grid.require_array("marks");
  for (std::size_t i = 0; i < marks.size(); ++i) {
    ObjectReader m(marks[i], index_path("$.grid.marks", i));
    info.marks.push_back({m.require_string("label"), m.require_string("policy"), m.require_object("at")});
  }
}

// The grid file's own words: its description and each axis's, when given.
void read_descriptions(const json* grid_document, SweepInfo& info) {
  if (!grid_document || !grid_document->is_object()) return;
  const auto description = grid_document->value("description", json());
  if (description.is_string()) info.description = description.get<std::string>();
  const auto axes = grid_document->value("axes", json::array());
  if (!axes.is_array()) return;
  for (const auto& axis : axes) {
    if (!axis.is_object() || !axis.value("description", json()).is_string()) continue;
    for (auto& known : info.axes) {
      if (axis.value("name", json()) == known.name) {
        known.description = axis["description"].get<std::string>();
      }
    }
  }
}

SweepInfo parse_sweep_info(const json& doc) {
  ObjectReader root(doc, "$");
  if (root.optional_string("kind") != "sweep_summary") {
    throw InputError("$.kind", "expected \"sweep_summary\": this is not a skewbench sweep summary");
  }
  SweepInfo info;
  read_grid(root.require_object("grid"), info);
  info.cells_total = static_cast<std::uint64_t>(root.require_int("cells_total"));
  info.cells_done = static_cast<std::uint64_t>(root.require_int("cells_done"));
  info.complete = root.require_bool("complete");
  const auto* shard = root.optional("shard");
  info.shard = shard ? *shard : json(nullptr);
  const auto* digest = root.optional("cells_core_digest");
  info.cells_core_digest = digest && digest->is_string() ? digest->get<std::string>() : "";
  info.per_policy = root.require_object("per_policy");
  const auto* environment = root.optional("environment");
  info.environment = environment && environment->is_object() ? *environment : json::object();
  const auto* warnings = root.optional("warnings");
  if (warnings) info.warnings = read_strings(*warnings, "$.warnings");
  read_descriptions(root.optional("grid_document"), info);
  return info;
}

CellRecord parse_cell_line(const std::string& line, const SweepInfo& sweep) {
  const auto doc = parse_json_text(line);
  ObjectReader r(doc, "$");
  CellRecord record;
  record.policy = r.require_string("policy");
  const bool known = std::any_of(sweep.policies.begin(), sweep.policies.end(),
                                 [&](const auto& p) { return p.label == record.policy; });
  if (!known) throw InputError("$.policy", "no policy labelled \"" + record.policy + "\" in sweep.json");
  record.parameters = r.require_object("parameters");
  const auto verdict = r.require_string("verdict");
  if (!state_from_verdict(verdict, record.state)) {
    throw InputError("$.verdict", "expected SAFE, CONFLICT, HELD or ERROR, got \"" + verdict + "\"");
  }
  return record;
}

const json& parameter(const json& parameters, const std::string& name) {
  static const json kNull;
  const auto it = parameters.find(name);
  return it == parameters.end() ? kNull : *it;
}

bool contains_value(const AxisInfo& axis, const json& value) {
  return std::find(axis.values.begin(), axis.values.end(), value) != axis.values.end();
}

// The value an axis keeps on a policy's maps when the map does not sweep it.
json held_value(const AxisInfo& axis, const PolicyInfo& policy) {
  if (!axis.applies_to(policy.name)) return nullptr;
  const auto& fallback = parameter(policy.defaults, axis.name);
  return contains_value(axis, fallback) ? fallback : axis.values.front();
}

}  // namespace

std::string value_text(const json& value) {
  if (value.is_null()) return "n/a";
  if (value.is_string()) return value.get<std::string>();
  return value.dump();
}

const AxisInfo& SweepInfo::axis(const std::string& name) const {
  for (const auto& a : axes) {
    if (a.name == name) return a;
  }
  throw std::logic_error("no axis named " + name);
}

SweepInfo read_sweep_info(const fs::path& sweep_json) {
  try {
    return parse_sweep_info(parse_json_text(read_file(sweep_json)));
  } catch (const InputError& e) {
    throw ReportInputError(sweep_json.string() + ": " + e.what());
  } catch (const std::runtime_error& e) {
    throw ReportInputError(e.what());  // read_file names the path
  }
}

MapAxis::MapAxis(const AxisInfo& axis, const PolicyInfo& policy)
    : name_(axis.name), applies_(axis.applies_to(policy.name)) {
  if (!applies_) {
    ticks_.push_back("n/a");
    return;
  }
  for (const auto& v : axis.values) {
    position_by_value_.emplace(v.dump(), ticks_.size());
    ticks_.push_back(value_text(v));
  }
}

std::optional<std::size_t> MapAxis::position_of(const json& value) const {
  if (!applies_) return value.is_null() ? std::optional<std::size_t>(0) : std::nullopt;
  const auto it = position_by_value_.find(value.dump());
  if (it == position_by_value_.end()) return std::nullopt;
  return it->second;
}

Slice::Slice(const SweepInfo& sweep, std::size_t policy_index, const MapInfo& map)
    : policy_label_(sweep.policies[policy_index].label),
      x_(sweep.axis(map.x), sweep.policies[policy_index]),
      y_(sweep.axis(map.y), sweep.policies[policy_index]) {
  const auto& policy = sweep.policies[policy_index];
  for (const auto& axis : sweep.axes) {
    if (axis.name == map.x || axis.name == map.y) continue;
    held_.emplace_back(axis.name, held_value(axis, policy));
    held_text_.emplace_back(axis.name, value_text(held_.back().second));
  }
  states_.assign(x_.size() * y_.size(), CellState::NotRun);
  for (const auto& mark : sweep.marks) {
    if (mark.policy == policy_label_) marks_.push_back(place(mark, sweep));
  }
}

void Slice::offer(const CellRecord& record) {
  if (record.policy != policy_label_) return;
  for (const auto& [name, value] : held_) {
    if (parameter(record.parameters, name) != value) return;
  }
  const auto x = x_.position_of(parameter(record.parameters, x_.name()));
  const auto y = y_.position_of(parameter(record.parameters, y_.name()));
  if (x && y) states_[*y * x_.size() + *x] = record.state;
}

std::size_t Slice::count(CellState state) const {
  return static_cast<std::size_t>(std::count(states_.begin(), states_.end(), state));
}

PlacedMark Slice::place(const MarkInfo& mark, const SweepInfo& sweep) const {
  PlacedMark placed{mark.label, "", std::nullopt, ""};
  for (const auto& axis : sweep.axes) {
    if (!mark.at.contains(axis.name)) continue;
    if (!placed.at_text.empty()) placed.at_text += ", ";
    placed.at_text += axis.name + " = " + value_text(mark.at[axis.name]);
  }
  for (const auto& [name, value] : held_) {
    if (mark.at.contains(name) && mark.at[name] != value) {
      placed.off_map_reason = "off this map, which holds " + name + " = " + value_text(value);
      return placed;
    }
  }
  auto along = [&](const MapAxis& axis) {
    return axis.applies() ? axis.position_of(parameter(mark.at, axis.name())) : std::optional<std::size_t>(0);
  };
  const auto x = along(x_);
  const auto y = along(y_);
  if (x && y) {
    placed.cell = std::make_pair(*x, *y);
  } else {
    placed.off_map_reason = "not on this map's grid";
  }
  return placed;
}

bool map_applies(const SweepInfo& sweep, const PolicyInfo& policy, const MapInfo& map) {
  return sweep.axis(map.x).applies_to(policy.name) && sweep.axis(map.y).applies_to(policy.name);
}

std::vector<Slice> make_slices(const SweepInfo& sweep) {
  std::vector<Slice> slices;
  for (std::size_t p = 0; p < sweep.policies.size(); ++p) {
    for (const auto& map : sweep.maps) {
      if (map_applies(sweep, sweep.policies[p], map)) slices.emplace_back(sweep, p, map);
    }
  }
  return slices;
}

Tally stream_cells(const fs::path& cells_jsonl, const SweepInfo& sweep, std::vector<Slice>& slices) {
  std::ifstream in(cells_jsonl);
  if (!in) throw ReportInputError(cells_jsonl.string() + ": cannot open");
  Tally tally;
  std::string line;
  for (std::uint64_t number = 1; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    CellRecord record;
    try {
      record = parse_cell_line(line, sweep);
    } catch (const InputError& e) {
      throw ReportInputError(cells_jsonl.string() + ":" + std::to_string(number) + ": " + e.what());
    }
    ++tally[record.policy][std::string(style_of(record.state).name)];
    for (auto& slice : slices) slice.offer(record);
  }
  if (in.bad()) throw ReportInputError(cells_jsonl.string() + ": read error");
  return tally;
}

}  // namespace skewbench::report
