#pragma once

// Wall time spent, for the timings the evidence records beside its core
// (duration_us fields). Never used for a decision: those take logical time.

#include <chrono>
#include <cstdint>

namespace skewbench {

// Microseconds of the monotonic clock since `start`.
inline std::int64_t micros_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace skewbench
