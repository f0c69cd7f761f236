#pragma once

// What the report reads from a sweep's sweep.json: the grid (policies, axes,
// maps, marks), the counts and the environment. The file is small and read
// whole, strictly: a key of the wrong type is an error naming its JSON path.

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sweep/grid.hpp"

namespace skewbench::report {

// How the report writes a value that does not apply: an axis the policy does
// not use, a parameter a cell does not have.
inline constexpr std::string_view kNotApplicable = "n/a";

// A sweep directory whose files cannot be read as a sweep; the message names
// the file (and the line of cells.jsonl). Maps to exit code 2.
class ReportInputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The grid's own types, as sweep.json records them.
using AxisInfo = sweep::Axis;
using MapInfo = sweep::HeatMap;
using MarkInfo = sweep::Mark;

struct PolicyInfo {
  std::string label;
  std::string name;
  nlohmann::json policy;
  nlohmann::json defaults;  // axis name -> value the axis takes when not swept, or null
};

// What the report uses from sweep.json.
struct SweepInfo {
  std::string grid_id;
  std::string description;  // the grid's own description ("" when sweep.json lacks it)
  std::vector<PolicyInfo> policies;
  std::vector<AxisInfo> axes;
  std::vector<MapInfo> maps;
  std::vector<MarkInfo> marks;
  std::uint64_t cells_total = 0;
  std::uint64_t cells_done = 0;
  bool complete = false;
  nlohmann::json shard;  // null unless the sweep is one shard
  std::string cells_core_digest;
  std::string identity_digest;
  nlohmann::json per_policy;  // label -> {"SAFE": n, ..., "cells": n}
  nlohmann::json environment;
  std::vector<std::string> warnings;

  const AxisInfo& axis(const std::string& name) const;
};

// Throws ReportInputError naming the file and the JSON path.
SweepInfo read_sweep_info(const std::filesystem::path& sweep_json);

}  // namespace skewbench::report
