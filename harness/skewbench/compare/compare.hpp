#pragma once

// Layer: compare. What changed between two runs or two sweeps, and whether the
// candidate is a safety regression.
//
// Exit codes: 0 no new CONFLICT; 1 a scenario or cell is CONFLICT in the
// candidate but not in the base; 2 the two cannot be compared; 3 the candidate
// holds ERROR results (so it cannot vouch for safety) and no regression was found.

#include <cstddef>
#include <filesystem>
#include <ostream>
#include <stdexcept>

namespace skewbench::compare {

// The two directories cannot be compared; the message says why.
class CannotCompare : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Options {
  bool markdown = false;
  std::size_t limit = 500;  // changed rows shown; 0 = all
};

// Compares BASE and CANDIDATE (two run or two sweep directories), prints the
// changes to `out` and notes to `err`, and returns the exit code above.
// Throws CannotCompare (or a JSON error for a malformed file).
int compare_dirs(const std::filesystem::path& base_dir, const std::filesystem::path& candidate_dir,
                 const Options& options, std::ostream& out, std::ostream& err);

}  // namespace skewbench::compare
