// skewbench targets: parse, call app::run_targets, print the findings; and
// skewbench targets init: print the template of a new target's file.

#include <iostream>

#include "cli/commands.hpp"
#include "common/errors.hpp"
#include "targets/target.hpp"
#include "targets/template.hpp"

namespace skewbench::cli {

int run_targets(const TargetsArgs& args) {
  if (args.out_dir.empty()) {
    std::cerr << "skewbench targets: --out is required (the folder for each target's evidence and the findings); "
                 "skewbench targets --help\n";
    return exit_code::kUsage;
  }
  const auto outcome = app::run_targets(args, interrupted_flag(), stderr_observer());
  if (outcome.rows.empty()) return outcome.exit_code;
  std::cout << targets::markdown_table(outcome.rows, outcome.expected);
  for (const auto& difference : outcome.differences) std::cout << "DIFFERS  " << difference << "\n";
  if (args.expect_file) {
    std::cout << (outcome.differences.empty() ? "every row as "
                                              : std::to_string(outcome.differences.size()) + " differences from ")
              << *args.expect_file << " says\n";
  }
  std::cout << "findings: " << (std::filesystem::path(args.out_dir) / "findings.md").string() << "\n";
  return outcome.exit_code;
}

int print_target_template(const std::string& name) {
  try {
    std::cout << targets::target_template(name);
  } catch (const targets::TargetFileError& e) {
    std::cerr << "skewbench targets init: " << e.what() << "\n";
    return exit_code::kUsage;
  }
  return exit_code::kPass;
}

}  // namespace skewbench::cli
