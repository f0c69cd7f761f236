#pragma once

// Words for a failed cpp-httplib request. httplib names its errors with one
// word ("Connection", "Read"); a reader needs the reason ("Connection refused").

#include <string>

#include <httplib.h>

namespace skewbench::infra {

// The reason a request to host:port failed, in words. For a failed connect it
// asks the operating system why by connecting once more (loopback: cheap).
std::string http_failure_reason(httplib::Error error, const std::string& host, int port);

// What a connect to host:port gets from the operating system: strerror of its
// errno ("Connection refused"), or "connected" when it succeeds.
std::string connect_outcome(const std::string& host, int port);

}  // namespace skewbench::infra
