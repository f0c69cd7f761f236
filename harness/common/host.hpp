#pragma once

// The machine's host name, for the record (evidence, /health).

#include <array>
#include <string>

#include <unistd.h>

namespace skewbench {

// gethostname(2), or "unknown" when it fails.
inline std::string host_name() {
  std::array<char, 256> buffer{};
  if (::gethostname(buffer.data(), buffer.size() - 1) != 0) return "unknown";
  return buffer.data();
}

}  // namespace skewbench
