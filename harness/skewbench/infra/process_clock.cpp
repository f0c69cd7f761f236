#include "infra/process_clock.hpp"

#include <cstdlib>
#include <fstream>
#include <set>
#include <system_error>

#include <elf.h>
#include <unistd.h>

#include "common/errors.hpp"
#include "common/files.hpp"
#include "common/process_tree.hpp"

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
  const std::lock_guard lock(writing_);
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

namespace {

// True when the ELF file at `path` has a section named `wanted` (64-bit ELF
// only; anything else reads as not).
bool has_elf_section(const std::filesystem::path& path, std::string_view wanted) {
  std::ifstream in(path, std::ios::binary);
  Elf64_Ehdr header{};
  if (!in.read(reinterpret_cast<char*>(&header), sizeof header)) return false;
  if (std::string_view(reinterpret_cast<const char*>(header.e_ident), SELFMAG) != ELFMAG ||
      header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_shentsize != sizeof(Elf64_Shdr) ||
      header.e_shstrndx >= header.e_shnum) {
    return false;
  }
  std::vector<Elf64_Shdr> sections(header.e_shnum);
  in.seekg(static_cast<std::streamoff>(header.e_shoff));
  if (!in.read(reinterpret_cast<char*>(sections.data()),
               static_cast<std::streamsize>(sections.size() * sizeof(Elf64_Shdr)))) {
    return false;
  }
  const auto& names_section = sections[header.e_shstrndx];
  constexpr std::uint64_t kMaxNamesBytes = 1 << 20;
  if (names_section.sh_size > kMaxNamesBytes) return false;
  std::string names(names_section.sh_size, '\0');
  in.seekg(static_cast<std::streamoff>(names_section.sh_offset));
  if (!in.read(names.data(), static_cast<std::streamsize>(names.size()))) return false;
  for (const auto& section : sections) {
    if (section.sh_name >= names.size()) continue;
    if (std::string_view(names.c_str() + section.sh_name) == wanted) return true;
  }
  return false;
}

// True when /proc/PID/maps lists a file named as `library` is.
bool maps_library(pid_t pid, const std::filesystem::path& library) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  std::error_code ec;
  const auto resolved = std::filesystem::canonical(library, ec);
  const auto name = "/" + library.filename().string();
  const auto resolved_name = ec ? name : "/" + resolved.filename().string();
  std::string line;
  while (std::getline(maps, line)) {
    if (line.ends_with(name) || line.ends_with(resolved_name)) return true;
  }
  return false;
}

}  // namespace

std::optional<std::string> clock_not_reached(pid_t root, int port, const std::filesystem::path& library) {
  if (!process_tree::proc_is_own_namespace()) return std::nullopt;
  std::vector<pid_t> tree = {root};
  for (const auto& entry : process_tree::descendants_of(root)) {
    if (!entry.zombie) tree.push_back(entry.pid);
  }
  std::set<pid_t> listeners;
  for (const auto inode : process_tree::listening_socket_inodes(port)) {
    for (const auto pid : process_tree::holders_of_socket(inode, tree)) listeners.insert(pid);
  }
  for (const auto pid : listeners) {
    const auto who = "pid " + std::to_string(pid) + " (" + process_tree::command_line_of(pid, 120) +
                     "), which listens on port " + std::to_string(port) + ",";
    if (!maps_library(pid, library)) {
      return who + " has not loaded " + library.filename().string() + " (it is not in /proc/" + std::to_string(pid) +
             "/maps: a static binary, or a command that clears LD_PRELOAD): it reads the machine's wall clock, which "
             "skewbench does not move";
    }
    if (has_elf_section("/proc/" + std::to_string(pid) + "/exe", ".go.buildinfo")) {
      return who +
             " is a Go program (its binary has a .go.buildinfo section): Go reads the wall clock through the "
             "vDSO, never through libc, so " +
             library.filename().string() + " cannot move it";
    }
  }
  return std::nullopt;
}

}  // namespace skewbench::infra
