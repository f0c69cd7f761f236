// skewbench compare BASE CANDIDATE: parses the arguments and prints what
// compare/compare.hpp finds.

#include <iostream>

#include "cli/commands.hpp"
#include "common/errors.hpp"
#include "compare/compare.hpp"

namespace skewbench::cli {

int compare_results(const CompareArgs& args) {
  compare::Comparison comparison;
  try {
    comparison = compare::compare_dirs(args.base, args.candidate, {.limit = args.limit});
  } catch (const compare::CannotCompare& e) {
    std::cerr << "skewbench: cannot compare: " << e.what() << "\n";
    return exit_code::kUsage;
  }
  switch (args.format) {
    case OutputFormat::Json:
      std::cout << compare::to_json(comparison).dump(2) << "\n";
      break;
    case OutputFormat::Markdown:
      std::cout << compare::to_markdown(comparison);
      break;
    case OutputFormat::Text:
      std::cout << compare::to_text(comparison);
      break;
  }
  return comparison.exit_code();
}

}  // namespace skewbench::cli
