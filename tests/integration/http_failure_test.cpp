// A failed HTTP request says why in words ("Connection refused"), not with
// cpp-httplib's one-word error name.

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/errors.hpp"
#include "infra/http_failure.hpp"
#include "infra/http_remote.hpp"

using namespace skewbench;
using Catch::Matchers::ContainsSubstring;

namespace {

// A loopback port nothing listens on: bound once to learn a free port, then closed.
int closed_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  socklen_t length = sizeof address;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0);
  ::close(fd);
  return ntohs(address.sin_port);
}

}  // namespace

TEST_CASE("a refused connection is reported as Connection refused, naming where") {
  const int port = closed_port();
  const auto reason = infra::http_failure_reason(httplib::Error::Connection, "127.0.0.1", port);
  CHECK_THAT(reason, ContainsSubstring("Connection refused"));
  CHECK_THAT(reason, ContainsSubstring("127.0.0.1:" + std::to_string(port)));
}

TEST_CASE("the remote client's error for an unreachable remote holds the whole reason") {
  infra::HttpRemote remote("http://127.0.0.1:" + std::to_string(closed_port()));
  try {
    remote.health();
    FAIL("health() answered");
  } catch (const InfrastructureError& e) {
    CHECK_THAT(e.what(), ContainsSubstring("Connection refused"));
    CHECK_THAT(e.what(), !ContainsSubstring("failed: Connection\n"));
  }
}
