#pragma once

// The TCP port of a service skewbench starts (a throwaway PostgreSQL cluster,
// a target's store, a service of a command, a test's remote-effect): chosen
// free, and chosen again when another process takes it before the service
// binds it.

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/errors.hpp"

namespace skewbench {

// A process skewbench started could not have the port it was given: another
// process took it between the choice and the bind (the service exited with
// the port in use), or holds it now. The start may be tried again on another
// port (start_on_free_port); skewbench's doing, not the service's fault.
class PortTaken : public InfrastructureError {
 public:
  using InfrastructureError::InfrastructureError;
};

// How many ports start_on_free_port tries before the start is an error.
inline constexpr int kPortAttempts = 5;

// A TCP port free on `host` (a numeric address; 0.0.0.0 and :: stand for
// every address) right now. It is one outside the kernel's range of
// ephemeral ports (net.ipv4.ip_local_port_range) when one is free there, so
// that no outgoing connection of any process is given it while its service
// is down between two starts; otherwise the one the kernel picks. Another
// process may still bind it before the service does (start_on_free_port).
// Throws std::runtime_error.
int free_port(const std::string& host);
int free_loopback_port();  // free_port("127.0.0.1")

// Whether a socket is bound to `port` on `host` now: a bind without
// SO_REUSEADDR fails with EADDRINUSE (a listener, or a connection's local
// port).
bool port_in_use(const std::string& host, int port);

// Whether a service's own words (its log since it started) say that its bind
// failed because the address was in use ("Address already in use",
// "EADDRINUSE", ...).
bool says_address_in_use(std::string_view log);

// After a start that ended before it was ready: throws PortTaken ("<what>,
// with its port P in use by another process: <log>") when `port` is in use
// now or the service's log says its bind failed; otherwise returns.
void throw_if_port_taken(const std::string& what, const std::string& host, int port, std::string_view log);

// Calls start(port) on a port from choose(), and on a new one each time it
// throws PortTaken, at most kPortAttempts times. Each port given up is
// appended to `given_up` ("port 23456: <why>"), for the run to say; when no
// attempt succeeded, throws PortTaken naming every port tried. Returns the
// port start() succeeded on. Any other exception of start() ends it at once.
int start_on_free_port(const std::function<int()>& choose, const std::function<void(int)>& start,
                       std::vector<std::string>& given_up);

}  // namespace skewbench
