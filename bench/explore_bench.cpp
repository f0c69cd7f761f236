// bench_explore: how many scenarios a minute `skewbench explore` generates,
// runs and holds to its invariants on the in-process engine, on each bounds
// file (default: the shipped ones), --repeats runs each with seeds 1, 2, ...,
// and the median; the time spent shrinking a finding is not counted (it is
// printed apart). It prints figures; it is not a pass/fail test of speed.

#include <algorithm>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <skewbench/build_info.hpp>

#include "common/allocator.hpp"
#include "explore/explore.hpp"

using namespace skewbench;

namespace {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const auto n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

void bench_bounds(const std::string& path, std::uint64_t scenarios, int repeats) {
  const auto bounds = explore::load_bounds(path);
  explore::check_bounds(bounds);
  std::vector<double> per_minute;
  std::vector<double> shrinking_s;
  std::uint64_t findings = 0;
  for (int r = 0; r < repeats; ++r) {
    const explore::ExploreSettings settings{.seed = static_cast<std::uint64_t>(r + 1),
                                            .budget_s = 86400,
                                            .max_scenarios = scenarios,
                                            .interrupted = nullptr};
    const auto outcome = explore::run_explore(bounds, settings);
    per_minute.push_back(static_cast<double>(outcome.tried) * 60 / outcome.generating_s);
    shrinking_s.push_back(outcome.duration_s - outcome.generating_s);
    findings += outcome.findings.size();
  }
  std::printf("  %-28s %10llu %8d %16.0f %12.3f %9llu\n", bounds.id.c_str(), static_cast<unsigned long long>(scenarios),
              repeats, median(per_minute), median(shrinking_s), static_cast<unsigned long long>(findings));
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_explore: scenarios a minute of skewbench explore on the in-process engine"};
  const std::string dir = std::string(SKEWBENCH_SOURCE_DIR) + "/scenarios/explore/";
  std::vector<std::string> bounds = {dir + "018-node-local.json", dir + "018-declared-authority.json"};
  std::uint64_t scenarios = 20000;
  int repeats = 3;
  app.add_option("--bounds", bounds, "bounds files (default: the shipped ones)");
  app.add_option("--scenarios", scenarios, "scenarios a run (default 20000)")->check(CLI::PositiveNumber);
  app.add_option("--repeats", repeats, "runs of each bounds file, seeds 1, 2, ...; the median is shown")
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  std::printf("bench_explore  harness %s (%s, %s, %s)  %u CPUs, one thread\n", build_info::kVersion,
              build_info::kGitCommit, build_info::kBuildType, allocator_name().c_str(),
              std::thread::hardware_concurrency());
  if (build_info::kIsDebugBuild) std::printf("***WARNING*** harness built as Debug: figures are not representative\n");
  std::printf("  %-28s %10s %8s %16s %12s %9s\n", "bounds", "scenarios", "repeats", "scenarios/min", "shrinking_s",
              "findings");
  try {
    for (const auto& path : bounds) bench_bounds(path, scenarios, repeats);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_explore: %s\n", e.what());
    return 3;
  }
  return 0;
}
