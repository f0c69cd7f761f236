// skewbench report DIR: the sweep in DIR as report.html and one SVG per map.
//
// Exit codes: 0 written; 2 DIR is not a sweep directory or its files are
// malformed (the message names the file), or an output exists without
// --overwrite or would be written through a link; 3 the output could not be
// written.

#include <iostream>
#include <memory>

#include <unistd.h>

#include "artifacts/out_folder.hpp"
#include "cli/commands.hpp"
#include "common/errors.hpp"
#include "common/files.hpp"
#include "report/report.hpp"

namespace skewbench::cli {

int render_report(const ReportArgs& args) {
  const std::filesystem::path out_dir = args.out_dir.value_or(args.sweep_dir);
  // The report joins an evidence folder's manifest: not while another
  // skewbench process writes that folder.
  std::unique_ptr<FileLock> lock;
  std::error_code ec;
  if (std::filesystem::exists(out_dir / artifacts::kManifestFile, ec)) {
    try {
      lock = std::make_unique<FileLock>(out_dir / artifacts::kLockFile,
                                        "pid " + std::to_string(::getpid()) + " (skewbench report)");
    } catch (const std::exception& e) {
      std::cerr << "skewbench: cannot report: " << e.what() << "\n";
      return exit_code::kInfrastructure;
    }
    if (!lock->held()) {
      std::cerr << "skewbench: cannot report: " << out_dir.string() << " is in use by " << lock->holder()
                << "; pass --out elsewhere or wait\n";
      return exit_code::kUsage;
    }
  }
  try {
    const auto files = report::write_report(args.sweep_dir, out_dir, args.overwrite);
    auto written = files.maps;
    written.push_back(files.html);
    artifacts::add_report_to_manifest(out_dir, written);
    std::cout << "wrote " << files.html.string() << "\n";
    for (const auto& map : files.maps) std::cout << "wrote " << map.string() << "\n";
    return exit_code::kPass;
  } catch (const report::ReportInputError& e) {
    std::cerr << "skewbench: cannot report: " << e.what() << "\n";
    return exit_code::kUsage;
  }
}

}  // namespace skewbench::cli
