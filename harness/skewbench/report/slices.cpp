#include "report/slices.hpp"

#include <algorithm>
#include <fstream>

#include "common/files.hpp"
#include "common/json_reader.hpp"
#include "common/text.hpp"
#include "scenario/verdict.hpp"

namespace skewbench::report {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

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
    throw InputError("$.verdict", "expected " + scenario::verdict_words() + ", got \"" + verdict + "\"");
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

MapAxis::MapAxis(const AxisInfo& axis, const PolicyInfo& policy)
    : name_(axis.name), applies_(axis.applies_to(policy.name)) {
  if (!applies_) {
    ticks_.push_back(std::string(kNotApplicable));
    return;
  }
  for (const auto& v : axis.values) {
    position_by_value_.emplace(v.dump(), ticks_.size());
    ticks_.push_back(text::cell(v, kNotApplicable));
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
    held_text_.emplace_back(axis.name, text::cell(held_.back().second, kNotApplicable));
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
  PlacedMark placed{.label = mark.label, .at_text = "", .cell = std::nullopt, .off_map_reason = ""};
  std::vector<std::string> at;
  for (const auto& axis : sweep.axes) {
    if (mark.at.contains(axis.name)) at.push_back(axis.name + " = " + text::cell(mark.at[axis.name], kNotApplicable));
  }
  placed.at_text = text::join(at, ", ");
  for (const auto& [name, value] : held_) {
    if (mark.at.contains(name) && mark.at[name] != value) {
      placed.off_map_reason = "off this map, which holds " + name + " = " + text::cell(value, kNotApplicable);
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
  std::ifstream in;
  try {
    in = open_input_file(cells_jsonl);
  } catch (const std::exception& e) {
    throw ReportInputError(e.what());
  }
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
