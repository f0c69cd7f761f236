#pragma once

// The remote-effect client over one keep-alive cpp-httplib connection with
// TCP_NODELAY. A POST that gets no response is ACK_UNKNOWN and is never retried
// here: whether to send it again is recovery's decision, not the transport's.

#include <memory>
#include <string>

#include "infra/ports.hpp"

namespace httplib {
class Client;
}

namespace skewbench::infra {

struct HttpEndpoint {
  std::string host;
  int port = 0;
};

// Parses "http://host:port" (a trailing "/" is allowed). Throws
// std::invalid_argument naming what is wrong.
HttpEndpoint parse_http_url(const std::string& url);

class HttpRemote final : public RemoteApi {
 public:
  explicit HttpRemote(const std::string& base_url);
  ~HttpRemote() override;

  HttpExchange post_effect(const PostEffectRequest& request) override;
  HttpExchange status(const std::string& operation_id, std::int64_t logical_time_s) override;
  nlohmann::json health() override;
  HttpExchange gc(const std::string& operation_id, std::int64_t logical_time_s) override;

  const std::string& base_url() const { return base_url_; }

 private:
  std::string base_url_;
  std::unique_ptr<httplib::Client> client_;
};

}  // namespace skewbench::infra
