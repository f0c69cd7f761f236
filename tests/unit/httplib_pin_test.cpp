// The connection loop of skewbench's HTTP servers (common/connection_server.cpp)
// derives from cpp-httplib's Server and calls its protected internals, which
// change between releases without notice. This test holds the build to the releases they
// were checked against: on any other, it fails and says what to check.

#include <algorithm>
#include <string>

#include <catch2/catch_test_macros.hpp>

#include "common/connection_server.hpp"

namespace http = skewbench::http;

TEST_CASE("The HTTP servers are built on a cpp-httplib release its connection loop was checked against") {
  const std::string built_on = CPPHTTPLIB_VERSION;
  INFO("built on cpp-httplib " << built_on
                               << ": check Server::process_request, svr_sock_, the Stream interface and "
                                  "TaskQueue::enqueue in its httplib.h against connection_server.cpp, run the suite "
                                  "and the docker test, then add the release to kCheckedHttplibVersions");
  CHECK(std::ranges::find(http::kCheckedHttplibVersions, built_on) != std::end(http::kCheckedHttplibVersions));
}
