#include "infra/http_failure.hpp"

#include <cerrno>
#include <cstring>
#include <memory>

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace skewbench::infra {
namespace {

constexpr int kConnectTimeoutMs = 2000;

// errno of a non-blocking connect that waits at most kConnectTimeoutMs.
int connect_errno(const addrinfo& address) {
  const int fd = ::socket(address.ai_family, address.ai_socktype | SOCK_NONBLOCK, address.ai_protocol);
  if (fd < 0) return errno;
  int error = 0;
  if (::connect(fd, address.ai_addr, address.ai_addrlen) != 0) {
    error = errno;
    if (error == EINPROGRESS) {
      pollfd waiter{.fd = fd, .events = POLLOUT, .revents = 0};
      if (::poll(&waiter, 1, kConnectTimeoutMs) == 1) {
        socklen_t length = sizeof(error);
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
      } else {
        error = ETIMEDOUT;
      }
    }
  }
  ::close(fd);
  return error;
}

}  // namespace

std::string connect_outcome(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0) {
    return std::string("cannot resolve ") + host + ": " + ::gai_strerror(rc);
  }
  const std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> addresses(found, &::freeaddrinfo);
  const int error = connect_errno(*found);
  return error == 0 ? "connected" : std::strerror(error);
}

std::string http_failure_reason(httplib::Error error, const std::string& host, int port) {
  const auto where = host + ":" + std::to_string(port);
  switch (error) {
    case httplib::Error::Connection: {
      const auto outcome = connect_outcome(host, port);
      // The service may have come up in between: then only the first attempt failed.
      return "cannot connect to " + where + ": " + (outcome == "connected" ? "the first attempt failed" : outcome);
    }
    case httplib::Error::ConnectionTimeout:
      return "connecting to " + where + " timed out";
    case httplib::Error::Read:
      return "the connection to " + where + " ended before a complete response";
    case httplib::Error::Write:
      return "the request could not be sent to " + where;
    case httplib::Error::Canceled:
      return "the request was cancelled";
    default:
      return "request to " + where + " failed (" + httplib::to_string(error) + ")";
  }
}

}  // namespace skewbench::infra
