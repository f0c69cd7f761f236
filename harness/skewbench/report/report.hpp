#pragma once

// skewbench report: a sweep directory rendered as one self-contained HTML page
// (inline SVG, no external scripts, stylesheets, fonts or images) and one
// standalone SVG per heat map, for a README or a CI step summary.

#include <filesystem>
#include <string>
#include <vector>

#include "report/slices.hpp"

namespace skewbench::report {

struct ReportFiles {
  std::filesystem::path html;
  std::vector<std::filesystem::path> maps;
};

// Reads sweep_dir/sweep.json, streams sweep_dir/cells.jsonl, and writes
// out_dir/report.html and out_dir/maps/<policy>__<x>__by__<y>.svg, each
// atomically. The output depends only on the two input files. Throws
// ReportInputError, before anything is written, when sweep_dir does not hold
// a readable sweep, when a file to write would go through a symbolic link or
// over something that is not a regular file, or when one exists and
// `overwrite` is false.
ReportFiles write_report(const std::filesystem::path& sweep_dir, const std::filesystem::path& out_dir, bool overwrite);

// "<policy>__<x>__by__<y>.svg" with every character outside [A-Za-z0-9._-]
// replaced by '_'.
std::string map_file_name(const std::string& policy_label, const std::string& x_axis, const std::string& y_axis);

}  // namespace skewbench::report
