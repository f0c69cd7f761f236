#include "common/stop_request.hpp"

#include <cerrno>
#include <cstdint>
#include <stdexcept>

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

namespace skewbench {

int stop_request_fd() {
  static const int fd = [] {
    const int created = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (created < 0) throw std::runtime_error("cannot create the stop request's eventfd");
    return created;
  }();
  return fd;
}

void request_stop() noexcept {
  const std::uint64_t one = 1;
  // Nobody reads the counter back, so it stays readable for every later wait.
  [[maybe_unused]] const auto written = ::write(stop_request_fd(), &one, sizeof one);
}

bool stop_requested() { return wait_readable_or_stop(-1, stop_request_fd(), 0); }

bool wait_readable_or_stop(int fd, int stop_fd, int timeout_ms) {
  pollfd fds[2] = {{fd, POLLIN, 0}, {stop_fd, POLLIN, 0}};
  while (::poll(fds, 2, timeout_ms) < 0) {
    if (errno != EINTR) return false;
  }
  return stop_fd >= 0 && fds[1].revents != 0;
}

}  // namespace skewbench
