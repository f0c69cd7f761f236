// skewbench verify DIR: exit 0 when DIR is whole, unaltered evidence of a run
// or a sweep; 1 when it is not (each problem on its own line); 2 when DIR is
// not a folder.

#include <iostream>

#include "artifacts/verify.hpp"
#include "cli/commands.hpp"
#include "cli/github.hpp"
#include "cli/junit_suites.hpp"
#include "common/errors.hpp"

namespace skewbench::cli {

int verify_evidence(const VerifyArgs& args) {
  artifacts::Verification result;
  try {
    result = artifacts::verify_folder(args.dir);
  } catch (const std::invalid_argument& e) {
    std::cerr << "skewbench: cannot verify: " << e.what() << "\n";
    write_junit_file(
        args.junit,
        artifacts::input_suites(
            "verify", {{.file = args.dir, .json_path = "", .message = std::string("cannot verify: ") + e.what()}}));
    return exit_code::kUsage;
  }
  for (const auto& p : result.problems) std::cout << "skewbench: " << args.dir << "/" << p << "\n";
  if (github_actions(args.github)) {
    for (const auto& p : result.problems) {
      std::cerr << github_error(args.dir + "/" + p.substr(0, p.find(':')), std::nullopt, "skewbench verify", p) << "\n";
    }
  }
  if (!write_junit_file(args.junit, verify_suites(args.dir, result))) return exit_code::kInfrastructure;
  const auto what = result.contents ? "a " + *result.contents : std::string("evidence");
  if (!result.valid()) {
    std::cout << "not valid: " << args.dir << " (" << what << "): " << result.problems.size() << " problem"
              << (result.problems.size() == 1 ? "" : "s") << "\n";
    return exit_code::kExpectationFailed;
  }
  std::cout << "valid: " << args.dir << " is " << what << ", " << result.files << " files match the manifest, digest "
            << result.digest << "\n";
  return exit_code::kPass;
}

}  // namespace skewbench::cli
