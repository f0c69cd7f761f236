// skewbench targets: parse, call app::run_targets, print the findings.

#include <iostream>

#include "cli/commands.hpp"
#include "common/errors.hpp"

namespace skewbench::cli {

int run_targets(const TargetsArgs& args) {
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

}  // namespace skewbench::cli
