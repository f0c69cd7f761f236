#pragma once

// What the benchmarks share to measure a sweep's memory: a generated grid of
// a given size, and a child process run to its end with its own peak RSS.

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

namespace skewbench::bench {

// A grid of 100 clock offsets x max(1, n/100) TTLs on `base_scenario` (the
// #018 sweep base), one policy: its own definition stays small, so the figure
// shows what running more cells costs. Its cell count is 100 * max(1, n/100).
inline nlohmann::json rss_grid(long n, const std::string& base_scenario) {
  const long ttls = std::max(1L, n / 100);
  return {
      {"id", "rss-" + std::to_string(n)},
      {"description", "bench: 100 clock offsets x n/100 TTLs"},
      {"base_scenario", base_scenario},
      {"policies", nlohmann::json::array({{{"policy", {{"name", "node_local"}}}}})},
      {"axes", nlohmann::json::array(
                   {{{"name", "node_b_offset_s"},
                     {"pointer", "/nodes/1/clock_offset_s"},
                     {"range", {{"from", -50}, {"to", 49}, {"step", 1}}}},
                    {{"name", "ttl_s"}, {"pointer", "/ttl_s"}, {"range", {{"from", 1}, {"to", ttls}, {"step", 1}}}}})}};
}

inline long rss_grid_cells(long n) { return 100 * std::max(1L, n / 100); }

struct MeasuredChild {
  int exit_code = -1;  // -1 when it did not exit
  double peak_rss_mib = 0;
  double seconds = 0;
};

// Runs argv (argv[0] a path) to its end with stdout on /dev/null, and
// returns its exit code, its peak RSS and its wall time. wait4 reports this
// one child's peak, which the supervisor's run_command does not.
inline MeasuredChild run_measuring_rss(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const auto started = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int null_fd = ::open("/dev/null", O_WRONLY);
    ::dup2(null_fd, STDOUT_FILENO);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  int status = 0;
  rusage usage{};
  ::wait4(pid, &status, 0, &usage);
  return {.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1,
          .peak_rss_mib = static_cast<double>(usage.ru_maxrss) / 1024.0,
          .seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()};
}

}  // namespace skewbench::bench
