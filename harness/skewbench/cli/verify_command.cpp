// skewbench verify DIR: exit 0 when DIR is whole, unaltered evidence of a run
// or a sweep; 1 when it is not (each problem on its own line); 2 when DIR is
// not a folder.

#include <iostream>

#include "artifacts/manifest.hpp"
#include "artifacts/verify.hpp"
#include "cli/commands.hpp"
#include "cli/github.hpp"
#include "cli/junit_suites.hpp"
#include "common/errors.hpp"

namespace skewbench::cli {
namespace {

// "cells.jsonl:12: ..." -> ("cells.jsonl", 12); "manifest.json: ..." -> ("manifest.json", none).
std::pair<std::string, std::optional<int>> problem_location(const std::string& problem) {
  const auto colon = problem.find(':');
  const auto file = problem.substr(0, colon);
  if (colon == std::string::npos) return {file, std::nullopt};
  const auto end = problem.find(':', colon + 1);
  const auto number = problem.substr(colon + 1, end == std::string::npos ? std::string::npos : end - colon - 1);
  if (number.empty() || number.size() > 9 || number.find_first_not_of("0123456789") != std::string::npos) {
    return {file, std::nullopt};
  }
  return {file, std::stoi(number)};
}

}  // namespace

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
      const auto [file, line] = problem_location(p);
      std::cerr << github_error(args.dir + "/" + file, line, "skewbench verify", p) << "\n";
    }
  }
  const bool junit_written = write_junit_file(args.junit, verify_suites(args.dir, result));
  const auto what = result.contents ? artifacts::with_article(*result.contents) : std::string("evidence");
  if (!result.valid()) {
    std::cout << "not valid: " << args.dir << " (" << what << "): " << result.problems.size() << " problem"
              << (result.problems.size() == 1 ? "" : "s") << "\n";
    return exit_code::kExpectationFailed;
  }
  std::cout << "valid: " << args.dir << " is " << what << ", " << result.files << " files match the manifest, digest "
            << result.digest << "\n";
  return junit_written ? exit_code::kPass : exit_code::kInfrastructure;
}

}  // namespace skewbench::cli
