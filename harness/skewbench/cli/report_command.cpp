// skewbench report DIR: the sweep in DIR as report.html and one SVG per map.
//
// Exit codes: 0 written; 2 DIR is not a sweep directory or its files are
// malformed (the message names the file); 3 the output could not be written.

#include <iostream>

#include "cli/commands.hpp"
#include "common/errors.hpp"
#include "report/report.hpp"

namespace skewbench::cli {

int render_report(const ReportArgs& args) {
  const std::filesystem::path out_dir = args.out_dir.value_or(args.sweep_dir);
  try {
    const auto files = report::write_report(args.sweep_dir, out_dir);
    std::cout << "wrote " << files.html.string() << "\n";
    for (const auto& map : files.maps) std::cout << "wrote " << map.string() << "\n";
    return exit_code::kPass;
  } catch (const report::ReportInputError& e) {
    std::cerr << "skewbench: cannot report: " << e.what() << "\n";
    return exit_code::kUsage;
  }
}

}  // namespace skewbench::cli
