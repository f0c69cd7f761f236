#pragma once

// A TCP port on 127.0.0.1 for a service skewbench starts (a throwaway
// PostgreSQL cluster, a test's remote-effect).

namespace skewbench {

// Asks the kernel for a loopback TCP port that is free right now (another
// process may still take it before the caller binds it). Throws
// std::runtime_error.
int free_loopback_port();

}  // namespace skewbench
