#include "common/loopback_port.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace skewbench {
namespace {

// Ports below this are left to services people install (a database's 5432,
// a cache's 6379, ...); skewbench chooses above it.
constexpr int kLowestChosenPort = 20000;
constexpr int kHighestPort = 65535;
// Random picks outside the ephemeral range before the kernel's pick is taken.
constexpr int kOutsidePicks = 32;

// The address a socket is bound to for `host`: 0.0.0.0 and :: as given, any
// other numeric address as it is.
struct Address {
  sockaddr_storage storage{};
  socklen_t length = 0;
  int family = AF_INET;
};

Address address_of(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST;
  addrinfo* found = nullptr;
  const std::string name = host.empty() ? "127.0.0.1" : host;
  if (::getaddrinfo(name.c_str(), "0", &hints, &found) != 0 || found == nullptr) {
    throw std::runtime_error("cannot find a free port: \"" + host + "\" is not a numeric address");
  }
  Address out;
  std::memcpy(&out.storage, found->ai_addr, found->ai_addrlen);
  out.length = found->ai_addrlen;
  out.family = found->ai_family;
  ::freeaddrinfo(found);
  const auto network_port = htons(static_cast<std::uint16_t>(port));
  if (out.family == AF_INET6) {
    reinterpret_cast<sockaddr_in6*>(&out.storage)->sin6_port = network_port;
  } else {
    reinterpret_cast<sockaddr_in*>(&out.storage)->sin_port = network_port;
  }
  return out;
}

// Binds a socket (no SO_REUSEADDR) to host:port and releases it: the port
// bound (the kernel's pick for 0), or 0 when the bind failed; errno is the
// bind's.
int bind_and_release(const std::string& host, int port) {
  const auto address = address_of(host, port);
  const int fd = ::socket(address.family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket(): ") + std::strerror(errno));
  int bound = 0;
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&address.storage), address.length) == 0) {
    sockaddr_storage name{};
    socklen_t length = sizeof name;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&name), &length) == 0) {
      bound = name.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&name)->sin6_port)
                                         : ntohs(reinterpret_cast<sockaddr_in*>(&name)->sin_port);
    }
  }
  const int bind_errno = errno;
  ::close(fd);
  errno = bind_errno;
  return bound;
}

// The kernel's range of ephemeral ports, [first, last]; {0, 0} when it cannot
// be read.
std::pair<int, int> ephemeral_range() {
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  int first = 0;
  int last = 0;
  if (!(in >> first >> last) || first <= 0 || last < first) return {0, 0};
  return {first, last};
}

}  // namespace

int free_port(const std::string& host) {
  const auto [first, last] = ephemeral_range();
  // The ports outside the ephemeral range: [kLowestChosenPort, first) and (last, 65535].
  const int below = first > kLowestChosenPort ? first - kLowestChosenPort : 0;
  const int above = last > 0 && last < kHighestPort ? kHighestPort - last : 0;
  if (below + above > 0) {
    // Not decision code: the port only has to be free.
    std::mt19937 pick(std::random_device{}());
    std::uniform_int_distribution<int> offset(0, below + above - 1);
    for (int i = 0; i < kOutsidePicks; ++i) {
      const int n = offset(pick);
      const int port = n < below ? kLowestChosenPort + n : last + 1 + (n - below);
      if (bind_and_release(host, port) == port) return port;
    }
  }
  const int port = bind_and_release(host, 0);
  if (port <= 0) throw std::runtime_error("cannot find a free port on " + host + ": " + std::strerror(errno));
  return port;
}

int free_loopback_port() { return free_port("127.0.0.1"); }

bool port_in_use(const std::string& host, int port) {
  return bind_and_release(host, port) != port && errno == EADDRINUSE;
}

bool says_address_in_use(std::string_view log) {
  std::string lower(log);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const std::string_view words : {"address already in use", "eaddrinuse", "address in use"}) {
    if (lower.find(words) != std::string::npos) return true;
  }
  return false;
}

void throw_if_port_taken(const std::string& what, const std::string& host, int port, std::string_view log) {
  if (port_in_use(host, port) || says_address_in_use(log)) {
    throw PortTaken(what + ", with its port " + std::to_string(port) +
                    " in use by another process: " + std::string(log));
  }
}

int start_on_free_port(const std::function<int()>& choose, const std::function<void(int)>& start,
                       std::vector<std::string>& given_up) {
  std::string tried;
  for (int attempt = 1;; ++attempt) {
    const int port = choose();
    try {
      start(port);
      return port;
    } catch (const PortTaken& e) {
      given_up.push_back("port " + std::to_string(port) + ": " + e.what());
      tried += (tried.empty() ? "" : "; ") + given_up.back();
      if (attempt == kPortAttempts) {
        throw PortTaken("each of the " + std::to_string(kPortAttempts) +
                        " ports skewbench chose was taken by another process before it could be used (" + tried + ")");
      }
    }
  }
}

}  // namespace skewbench
