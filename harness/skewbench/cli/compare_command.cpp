// skewbench compare BASE CANDIDATE: parses the arguments and prints what
// compare/compare.hpp finds.

#include <iostream>

#include "cli/commands.hpp"
#include "common/errors.hpp"
#include "compare/compare.hpp"

namespace skewbench::cli {

int compare_results(const CompareArgs& args) {
  try {
    return compare::compare_dirs(args.base, args.candidate,
                                 {.markdown = args.format == "markdown", .limit = args.limit}, std::cout, std::cerr);
  } catch (const std::exception& e) {
    // CannotCompare, or a file that is not what its name promises.
    std::cerr << "skewbench: cannot compare: " << e.what() << "\n";
    return exit_code::kUsage;
  }
}

}  // namespace skewbench::cli
