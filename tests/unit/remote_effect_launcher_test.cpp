// The launcher's command template, without starting anything, and the
// choice of a service's port.

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "common/files.hpp"
#include "common/loopback_port.hpp"
#include "remote_effect/launcher.hpp"

namespace re = skewbench::remote_effect;

TEST_CASE("a service command's placeholders become this start's values, shell-quoted") {
  re::LaunchOptions options;
  options.state_db = "/tmp/it's here/remote.db";
  options.dedupe = re::DedupeMode::volatile_;
  CHECK(re::expand_command("svc --port {port} --db {state_db} --mode {dedupe} --host {host}", options, 8081) ==
        "svc --port 8081 --db '/tmp/it'\\''s here/remote.db' --mode volatile --host '127.0.0.1'");
}

TEST_CASE("braces that are the shell's stay as written; an unknown placeholder is refused by name") {
  const re::LaunchOptions options;
  CHECK(re::expand_command("svc --port ${PORT} | awk '{print $1}'", options, 1) ==
        "svc --port ${PORT} | awk '{print $1}'");
  CHECK_THROWS_WITH(re::expand_command("svc --port {prot}", options, 1),
                    Catch::Matchers::ContainsSubstring("unknown placeholder {prot}"));
  CHECK_THROWS_WITH(re::expand_command("svc --port {PORT}", options, 1),
                    Catch::Matchers::ContainsSubstring("unknown placeholder {PORT}"));
  CHECK_THROWS_WITH(re::expand_command("svc --db {state-db}", options, 1),
                    Catch::Matchers::ContainsSubstring("unknown placeholder {state-db}"));
}

TEST_CASE("more placeholders are filled in the same pass: what a value brings in is never read again") {
  re::LaunchOptions options;
  options.placeholders = {{"{target_dir}", "/srv/odd {port} dir"}, {"{store_port}", "6379"}};
  CHECK(re::expand_command("node {target_dir}/service.js --redis {store_port} --port {port}", options, 8081) ==
        "node '/srv/odd {port} dir'/service.js --redis '6379' --port 8081");
  CHECK_THROWS_WITH(re::expand_command("svc {store_dir}", options, 1),
                    Catch::Matchers::ContainsSubstring("{store_port}, {target_dir}"));
}

// The port of a service skewbench chooses (common/loopback_port.hpp).

TEST_CASE("a chosen port is free, and outside the kernel's ephemeral range when one is free there") {
  std::ifstream range_file("/proc/sys/net/ipv4/ip_local_port_range");
  int first = 0;
  int last = 0;
  range_file >> first >> last;
  for (int i = 0; i < 20; ++i) {
    const int port = skewbench::free_loopback_port();
    CHECK_FALSE(skewbench::port_in_use("127.0.0.1", port));
    if (first > 20000 && last > 0) CHECK((port < first || port > last));
  }
}

namespace {

// A socket bound to a port of the kernel's choice on 127.0.0.1, and that port.
int bound_loopback_socket(int& port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  socklen_t length = sizeof address;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0);
  port = ntohs(address.sin_port);
  return fd;
}

}  // namespace

TEST_CASE("a port a socket is bound to is in use, and free again once it is closed") {
  int port = 0;
  const int fd = bound_loopback_socket(port);
  CHECK(skewbench::port_in_use("127.0.0.1", port));
  ::close(fd);
  CHECK_FALSE(skewbench::port_in_use("127.0.0.1", port));
}

TEST_CASE("a service's words that its bind failed for an address in use are recognised") {
  CHECK(skewbench::says_address_in_use("OSError: [Errno 98] Address already in use"));
  CHECK(skewbench::says_address_in_use("Error: listen EADDRINUSE: address already in use 127.0.0.1:3000"));
  CHECK(skewbench::says_address_in_use("listen tcp 127.0.0.1:8080: bind: address already in use"));
  CHECK_FALSE(skewbench::says_address_in_use("Traceback: KeyError: 'port'"));
  CHECK_FALSE(skewbench::says_address_in_use(""));
}

TEST_CASE("a start that ended before ready is PortTaken only when its port is held or its words say so") {
  int held = 0;
  const int fd = bound_loopback_socket(held);
  CHECK_THROWS_AS(skewbench::throw_if_port_taken("it exited", "127.0.0.1", held, "bye"), skewbench::PortTaken);
  ::close(fd);
  CHECK_NOTHROW(skewbench::throw_if_port_taken("it exited", "127.0.0.1", held, "KeyError: 'port'"));
  try {
    skewbench::throw_if_port_taken("it exited", "127.0.0.1", held, "OSError: [Errno 98] Address already in use");
    FAIL("not PortTaken");
  } catch (const skewbench::PortTaken& e) {
    CHECK(std::string(e.what()) == "it exited, with its port " + std::to_string(held) +
                                       " in use by another process: OSError: [Errno 98] Address already in use");
  }
}

TEST_CASE("a log is quoted from where a start began, at most its last bytes") {
  const auto path = std::filesystem::temp_directory_path() / ("skewbench-log-" + std::to_string(::getpid()));
  std::ofstream(path, std::ios::binary) << "before start\nnew line one\nnew line two\n";
  CHECK(skewbench::read_log_since(path, 13, 1000) == "new line one\nnew line two\n");
  CHECK(skewbench::read_log_since(path, 13, 13) == "...new line two\n");
  CHECK(skewbench::read_log_since(path, 100, 1000).empty());
  std::filesystem::remove(path);
  CHECK_THROWS_AS(skewbench::read_log_since(path, 0, 1000), std::runtime_error);
}

TEST_CASE("a start whose port is taken is tried on another port, at most kPortAttempts times, and says each") {
  int next_port = 30000;
  const auto choose = [&] { return next_port++; };
  SECTION("taken twice, then started") {
    std::vector<std::string> given_up;
    std::vector<int> tried;
    const int port = skewbench::start_on_free_port(
        choose,
        [&](int p) {
          tried.push_back(p);
          if (tried.size() < 3) throw skewbench::PortTaken("held by pid 42 (nc -l)");
        },
        given_up);
    CHECK(port == 30002);
    CHECK(tried == std::vector<int>{30000, 30001, 30002});
    REQUIRE(given_up.size() == 2);
    CHECK(given_up[0] == "port 30000: held by pid 42 (nc -l)");
    CHECK(given_up[1] == "port 30001: held by pid 42 (nc -l)");
  }
  SECTION("taken every time: an error naming each port") {
    std::vector<std::string> given_up;
    int starts = 0;
    try {
      skewbench::start_on_free_port(
          choose,
          [&](int) {
            ++starts;
            throw skewbench::PortTaken("taken");
          },
          given_up);
      FAIL("no error");
    } catch (const skewbench::PortTaken& e) {
      CHECK_THAT(e.what(), Catch::Matchers::ContainsSubstring("each of the 5 ports"));
      CHECK_THAT(e.what(), Catch::Matchers::ContainsSubstring("port 30000: taken; port 30001: taken"));
      CHECK_THAT(e.what(), Catch::Matchers::ContainsSubstring("port 30004: taken"));
    }
    CHECK(starts == skewbench::kPortAttempts);
    CHECK(given_up.size() == static_cast<std::size_t>(skewbench::kPortAttempts));
  }
  SECTION("any other error ends it at once") {
    std::vector<std::string> given_up;
    int starts = 0;
    CHECK_THROWS_WITH(skewbench::start_on_free_port(
                          choose,
                          [&](int) {
                            ++starts;
                            throw skewbench::InfrastructureError("the service exited with code 1: KeyError");
                          },
                          given_up),
                      "the service exited with code 1: KeyError");
    CHECK(starts == 1);
    CHECK(given_up.empty());
  }
}
