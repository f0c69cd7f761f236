#pragma once

// The report's heat maps. cells.jsonl is streamed line by line, and a slice
// keeps only the cells that fall on its map, so memory grows with the maps,
// never with the sweep.

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/markup.hpp"
#include "report/sweep_info.hpp"

namespace skewbench::report {

// One line of cells.jsonl, reduced to what a map needs.
struct CellRecord {
  std::string policy;  // label
  nlohmann::json parameters;
  CellState state = CellState::NotRun;
};

// One axis of a map as the policy sees it: the swept values, or a single
// "n/a" position when the axis does not apply to the policy.
class MapAxis {
 public:
  MapAxis(const AxisInfo& axis, const PolicyInfo& policy);

  const std::string& name() const { return name_; }
  bool applies() const { return applies_; }
  std::size_t size() const { return ticks_.size(); }
  const std::vector<std::string>& ticks() const { return ticks_; }
  // The position of a cell's parameter value, if it lies on this axis.
  std::optional<std::size_t> position_of(const nlohmann::json& value) const;

 private:
  std::string name_;
  bool applies_;
  std::vector<std::string> ticks_;
  std::map<std::string, std::size_t> position_by_value_;
};

// A published point on a map, and the cell it lands on (if it lies on the map).
struct PlacedMark {
  std::string label;
  std::string at_text;                                      // "node_b_offset_s = 20, recovery_at_s = 50"
  std::optional<std::pair<std::size_t, std::size_t>> cell;  // (x, y) positions
  std::string off_map_reason;                               // why `cell` is empty
};

// One heat map: a policy's verdicts over two axes, every other axis held at
// the policy's default (the first swept value when the default was not swept).
class Slice {
 public:
  Slice(const SweepInfo& sweep, std::size_t policy_index, const MapInfo& map);

  // Keeps the record when it is this policy's and lies on this slice.
  void offer(const CellRecord& record);

  const std::string& policy_label() const { return policy_label_; }
  const MapAxis& x() const { return x_; }
  const MapAxis& y() const { return y_; }
  // The other axes and the value each is held at ("n/a" when it does not apply).
  const std::vector<std::pair<std::string, std::string>>& held() const { return held_text_; }
  CellState at(std::size_t x, std::size_t y) const { return states_[y * x_.size() + x]; }
  std::size_t count(CellState state) const;
  const std::vector<PlacedMark>& marks() const { return marks_; }

 private:
  PlacedMark place(const MarkInfo& mark, const SweepInfo& sweep) const;

  std::string policy_label_;
  MapAxis x_;
  MapAxis y_;
  std::vector<std::pair<std::string, nlohmann::json>> held_;
  std::vector<std::pair<std::string, std::string>> held_text_;
  std::vector<CellState> states_;
  std::vector<PlacedMark> marks_;
};

// Whether a map is drawn for a policy: both its axes apply to the policy (a
// map over an axis the policy ignores would be a single n/a row).
bool map_applies(const SweepInfo& sweep, const PolicyInfo& policy, const MapInfo& map);

// One slice per policy per map that applies to it, policies in grid order.
std::vector<Slice> make_slices(const SweepInfo& sweep);

// Verdict counts per policy label as found in cells.jsonl.
using Tally = std::map<std::string, std::map<std::string, std::uint64_t>>;

// Streams cells.jsonl into the slices. Throws ReportInputError naming the file
// and line of a malformed record.
Tally stream_cells(const std::filesystem::path& cells_jsonl, const SweepInfo& sweep, std::vector<Slice>& slices);

}  // namespace skewbench::report
