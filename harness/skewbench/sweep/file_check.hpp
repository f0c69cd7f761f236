#pragma once

// skewbench validate's engine: checks scenario and grid files without running
// anything, and reports every bad file rather than stopping at the first.

#include <filesystem>
#include <functional>
#include <optional>
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

// A check of a kind of file this layer does not know (a later layer's: an
// explore bounds file): the check when `document`, the file's JSON (null when
// it is none), is of that kind; nullopt otherwise. Never throws.
using OtherFileCheck = std::function<std::optional<FileCheck>(const std::filesystem::path&, const nlohmann::json&)>;

// Checks every file the paths name (a directory contributes its *.json files,
// as for run), grids with their base scenario, files `other` knows as it
// says, and that no scenario id or report_as section is used twice. Never
// throws for bad input.
std::vector<FileCheck> check_files(const std::vector<std::string>& paths, const OtherFileCheck& other = {});

}  // namespace skewbench::sweep
