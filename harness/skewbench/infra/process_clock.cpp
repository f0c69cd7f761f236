#include "infra/process_clock.hpp"

#include <cstdlib>
#include <system_error>

#include <unistd.h>

#include "common/errors.hpp"
#include "common/files.hpp"

namespace skewbench::infra {
namespace fs = std::filesystem;

namespace {
constexpr const char* kLibrary = "libfaketime.so.1";

bool readable(const fs::path& path) { return ::access(path.c_str(), R_OK) == 0; }
}  // namespace

std::vector<fs::path> libfaketime_search_dirs() {
  return {"/usr/lib/x86_64-linux-gnu/faketime",
          "/usr/lib/aarch64-linux-gnu/faketime",
          "/usr/lib/faketime",
          "/usr/local/lib/faketime",
          "/usr/lib64/faketime",
          "/usr/local/lib"};
}

fs::path find_libfaketime(const std::optional<std::string>& given) {
  if (given) {
    if (readable(*given)) return fs::absolute(*given);
    throw InfrastructureError("--libfaketime " + *given + " is not a readable file");
  }
  if (const char* env = std::getenv("SKEWBENCH_LIBFAKETIME"); env && *env) {
    if (readable(env)) return fs::absolute(env);
    throw InfrastructureError(std::string("SKEWBENCH_LIBFAKETIME=") + env + " is not a readable file");
  }
  std::string tried;
  for (const auto& dir : libfaketime_search_dirs()) {
    const auto candidate = dir / kLibrary;
    if (readable(candidate)) return candidate;
    tried += (tried.empty() ? "" : ", ") + candidate.string();
  }
  throw InfrastructureError(
      std::string("cannot find ") + kLibrary + " (tried " + tried +
      "); install libfaketime (Debian and Ubuntu: apt-get install libfaketime) or pass --libfaketime PATH");
}

std::optional<std::string> process_clock_range_problem(std::int64_t unix_s) {
  if (unix_s >= kMinProcessClockS && unix_s <= kMaxProcessClockS) return std::nullopt;
  return "a process clock can be set to " + std::to_string(kMinProcessClockS) + ".." +
         std::to_string(kMaxProcessClockS) + " s (1970-01-01 to 9999-12-31 UTC), not " + std::to_string(unix_s);
}

fs::path find_wallclock_library() {
  constexpr const char* kWallclock = "libskewbench-wallclock.so";
  if (const char* env = std::getenv("SKEWBENCH_WALLCLOCK_LIB"); env && *env) {
    if (readable(env)) return fs::absolute(env);
    throw InfrastructureError(std::string("SKEWBENCH_WALLCLOCK_LIB=") + env + " is not a readable file");
  }
  std::error_code ec;
  const auto self = fs::read_symlink("/proc/self/exe", ec);
  std::string tried;
  if (!ec) {
    for (const auto& candidate :
         {self.parent_path() / kWallclock, self.parent_path() / ".." / "lib" / "skewbench" / kWallclock}) {
      if (readable(candidate)) return candidate.lexically_normal();
      tried += (tried.empty() ? "" : ", ") + candidate.lexically_normal().string();
    }
  }
  throw InfrastructureError(std::string("cannot find ") + kWallclock + " (tried " + tried +
                            "); it is built with skewbench, or name it with SKEWBENCH_WALLCLOCK_LIB");
}

ProcessClock::ProcessClock(fs::path timestamp_file, fs::path library, std::int64_t initial_s, ClockLibrary kind)
    : timestamp_file_(std::move(timestamp_file)), library_(std::move(library)), kind_(kind) {
  set(initial_s);
}

void ProcessClock::set(std::int64_t unix_s) {
  if (auto problem = process_clock_range_problem(unix_s)) throw InfrastructureError(*problem);
  // A new file renamed over the old: the process reads the whole line, old or new.
  auto staged = timestamp_file_;
  staged += ".next";
  try {
    write_file_unsynced(staged, std::to_string(unix_s) + "\n");
    fs::rename(staged, timestamp_file_);
  } catch (const std::exception& e) {
    throw InfrastructureError("cannot set the process clock in " + timestamp_file_.string() + ": " + e.what());
  }
  now_s_ = unix_s;
}

std::map<std::string, std::string> ProcessClock::environment() const {
  std::string preload = library_.string();
  if (const char* existing = std::getenv("LD_PRELOAD"); existing && *existing) preload += std::string(" ") + existing;
  if (kind_ == ClockLibrary::skewbench) {
    return {{"LD_PRELOAD", preload}, {"SKEWBENCH_WALL_CLOCK_FILE", timestamp_file_.string()}, {"TZ", "UTC"}};
  }
  return {{"LD_PRELOAD", preload},
          {"FAKETIME_TIMESTAMP_FILE", timestamp_file_.string()},
          {"FAKETIME_NO_CACHE", "1"},
          {"FAKETIME_FMT", "%s"},
          {"FAKETIME_DONT_FAKE_MONOTONIC", "1"},
          {"TZ", "UTC"}};
}

}  // namespace skewbench::infra
