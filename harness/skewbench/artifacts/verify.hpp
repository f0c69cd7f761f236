#pragma once

// skewbench verify: is a folder the whole, unaltered evidence skewbench wrote?
// Checks the manifest (every listed file present with its size and SHA-256,
// nothing else beside them), every JSON file against its schema, and
// recomputes every digest and count the files state.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace skewbench::artifacts {

struct Verification {
  std::optional<std::string> contents;  // "run", "sweep" or "explore", when the manifest says
  std::size_t files = 0;                // files the manifest lists
  std::vector<std::string> problems;    // each names the file (and JSON path or line)
  // The run's core digest, the sweep's cells core digest, or the scenarios
  // core digest explore.json states (the scenarios tried are not kept).
  std::string digest;
  bool valid() const { return problems.empty(); }
};

// Throws std::invalid_argument when dir is not a folder.
Verification verify_folder(const std::filesystem::path& dir);

}  // namespace skewbench::artifacts
