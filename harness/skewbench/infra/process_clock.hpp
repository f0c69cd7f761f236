#pragma once

// A process's own wall clock, driven by skewbench. A service started under
// libfaketime (LD_PRELOAD) with FAKETIME_TIMESTAMP_FILE, FAKETIME_NO_CACHE=1
// and FAKETIME_FMT=%s reads, at every clock read, the Unix second written in
// its timestamp file: a stopped clock at exactly that second. Setting the
// clock is a rename of a new file over the old one, so a reader sees the old
// time or the new one, never a torn line; time passes only when skewbench
// writes it, never by sleeping. CLOCK_MONOTONIC is left alone
// (FAKETIME_DONT_FAKE_MONOTONIC=1): timers and timeouts keep working, and a
// step back of the wall clock is not a step back of monotonic time.
// docs/real-clocks.md says what libfaketime intercepts and what it does not.

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

#include "common/vocabulary.hpp"

namespace skewbench::infra {

// The library that makes a process read the clock file (docs/real-clocks.md).
//  - libfaketime: the default, for any dynamically linked program;
//  - skewbench: libskewbench-wallclock (harness/wallclock), for a program
//    libfaketime 0.9.10 cannot start, one whose allocator reads a clock as it
//    initialises (jemalloc: Redis, Valkey). It fakes the wall clock only.
enum class ClockLibrary { libfaketime, skewbench };
inline constexpr auto kClockLibraries =
    vocabulary<ClockLibrary>({{ClockLibrary::libfaketime, "libfaketime"}, {ClockLibrary::skewbench, "skewbench"}});

// Where libskewbench-wallclock.so is: $SKEWBENCH_WALLCLOCK_LIB, next to the
// running executable, then ../lib/skewbench beside it. Throws
// InfrastructureError naming what was tried.
std::filesystem::path find_wallclock_library();

// The range of seconds a process clock can be set to: the Unix epoch up to
// the end of the year 9999. libfaketime reads a leading '-' as an offset from
// the real clock, so no time before the epoch can be written.
inline constexpr std::int64_t kMinProcessClockS = 0;
inline constexpr std::int64_t kMaxProcessClockS = 253'402'300'799;

// Where libfaketime.so.1 is: `given` (--libfaketime), $SKEWBENCH_LIBFAKETIME,
// then the library folders Debian and other distributions install it in.
// Throws InfrastructureError naming what was tried.
std::filesystem::path find_libfaketime(const std::optional<std::string>& given);

// The folders find_libfaketime() looks in, in order, after the two above.
std::vector<std::filesystem::path> libfaketime_search_dirs();

class ProcessClock {
 public:
  // Writes `initial_s` to `timestamp_file` (creating it); the process is to
  // read it through `library` (libfaketime.so.1 or libskewbench-wallclock.so,
  // as `kind` says). Throws InfrastructureError.
  ProcessClock(std::filesystem::path timestamp_file, std::filesystem::path library, std::int64_t initial_s = 0,
               ClockLibrary kind = ClockLibrary::libfaketime);

  // Sets the process's wall clock to `unix_s`. Throws InfrastructureError
  // when `unix_s` is outside [kMinProcessClockS, kMaxProcessClockS] or the file
  // cannot be written. Thread-safe: POSTs in flight together each set it.
  void set(std::int64_t unix_s);
  // The second last written.
  std::int64_t now_s() const { return now_s_.load(); }

  const std::filesystem::path& timestamp_file() const { return timestamp_file_; }
  const std::filesystem::path& library() const { return library_; }
  ClockLibrary kind() const { return kind_; }

  // The environment a process reads this clock with. An LD_PRELOAD already in
  // skewbench's environment is kept after the clock's library.
  std::map<std::string, std::string> environment() const;

 private:
  std::filesystem::path timestamp_file_;
  std::filesystem::path library_;
  ClockLibrary kind_ = ClockLibrary::libfaketime;
  std::mutex writing_;  // one writer of the staged file at a time
  std::atomic<std::int64_t> now_s_ = 0;
};

// Why a time cannot be a process clock's, or nothing.
std::optional<std::string> process_clock_range_problem(std::int64_t unix_s);

// Why the processes of the tree under `root` that listen on `port` do not
// read the wall clock `library` answers (docs/real-clocks.md, "A service that
// does not read the clock"): one that does not map it (a static binary, a
// command that clears LD_PRELOAD), or a Go program (it reads the clock
// through the vDSO, never through libc). nullopt when each maps it, or when
// /proc cannot tell (another pid namespace, no listener found).
std::optional<std::string> clock_not_reached(pid_t root, int port, const std::filesystem::path& library);

}  // namespace skewbench::infra
