#pragma once

// skewbench validate's engine: checks scenario and grid files without running
// anything, and reports every bad file rather than stopping at the first.

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace skewbench::sweep {

struct FileCheck {
  std::string path;
  std::string kind;                 // "scenario" or "grid"; empty for a path that is neither
  std::string summary;              // what a valid file holds, e.g. "scenario 018-uncertainty"
  std::vector<std::string> errors;  // each "FILE: $.json.path: message"

  bool ok() const { return errors.empty(); }
};

// A grid names a base scenario and axes; a scenario never does.
bool looks_like_grid(const nlohmann::json& document);

// Checks every file the paths name (a directory contributes its *.json files,
// as for run), grids with their base scenario, and that no scenario id or
// report_as section is used twice. Never throws for bad input.
std::vector<FileCheck> check_files(const std::vector<std::string>& paths);

}  // namespace skewbench::sweep
