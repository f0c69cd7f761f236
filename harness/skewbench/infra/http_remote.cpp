#include "infra/http_remote.hpp"

#include <charconv>
#include <chrono>
#include <stdexcept>

#include <httplib.h>

#include "common/errors.hpp"
#include "infra/http_failure.hpp"

namespace skewbench::infra {
namespace {

using Clock = std::chrono::steady_clock;

std::int64_t micros_since(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count();
}

nlohmann::json headers_json(const httplib::Headers& headers) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [k, v] : headers) out[k] = v;
  return out;
}

nlohmann::json parse_body(const std::string& body, const std::string& what) {
  try {
    return nlohmann::json::parse(body);
  } catch (const std::exception&) {
    throw InfrastructureError(what + ": the remote answered with a body that is not JSON");
  }
}

// httplib's one-word error ("Connection") as the reason a reader needs.
std::string failure_reason(httplib::Error error, const std::string& base_url) {
  const auto endpoint = parse_http_url(base_url);
  return http_failure_reason(error, endpoint.host, endpoint.port);
}

}  // namespace

HttpEndpoint parse_http_url(const std::string& url) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0) throw std::invalid_argument("remote URL must start with http://: " + url);
  std::string rest = url.substr(scheme.size());
  if (!rest.empty() && rest.back() == '/') rest.pop_back();
  if (rest.find('/') != std::string::npos) throw std::invalid_argument("remote URL must not have a path: " + url);
  const auto colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    throw std::invalid_argument("remote URL must be http://HOST:PORT: " + url);
  }
  HttpEndpoint out;
  out.host = rest.substr(0, colon);
  const auto port_text = rest.substr(colon + 1);
  const auto [ptr, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), out.port);
  if (ec != std::errc() || ptr != port_text.data() + port_text.size() || out.port <= 0 || out.port > 65535) {
    throw std::invalid_argument("remote URL has an invalid port: " + url);
  }
  return out;
}

HttpRemote::HttpRemote(const std::string& base_url) : base_url_(base_url) {
  const auto endpoint = parse_http_url(base_url);
  client_ = std::make_unique<httplib::Client>(endpoint.host, endpoint.port);
  client_->set_tcp_nodelay(true);
  client_->set_keep_alive(true);
  client_->set_connection_timeout(5, 0);
  client_->set_read_timeout(30, 0);
  client_->set_write_timeout(30, 0);
}

HttpRemote::~HttpRemote() = default;

HttpExchange HttpRemote::post_effect(const PostEffectRequest& r) {
  httplib::Headers headers = {
      {"X-Operation-Id", r.operation_id},
      {"Idempotency-Key", r.idempotency_key},
      {"X-Idempotency-TTL", std::to_string(r.ttl_s)},
      {"X-Logical-Time", std::to_string(r.logical_time_s)},
      {"X-Drop-Ack", r.drop_ack ? "1" : "0"},
  };
  if (r.expected_temporal_epoch) {
    headers.emplace("X-Require-Temporal-Fence", "1");
    headers.emplace("X-Expected-Temporal-Epoch", std::to_string(*r.expected_temporal_epoch));
  }
  HttpExchange ex;
  ex.request = {{"method", "POST"}, {"path", "/effects"}, {"headers", headers_json(headers)}, {"body", r.body}};
  const auto start = Clock::now();
  auto res = client_->Post("/effects", headers, r.body, "application/json");
  ex.duration_us = micros_since(start);
  if (!res) {
    const auto err = res.error();
    // The request went out and the connection ended without a response: the
    // effect may exist. Anything else means the request never left.
    if (err == httplib::Error::Read) {
      ex.outcome = TransportOutcome::AckUnknown;
      ex.response_body = nullptr;
      return ex;
    }
    throw InfrastructureError("POST " + base_url_ + "/effects failed: " + failure_reason(err, base_url_));
  }
  ex.http_status = res->status;
  ex.response_body = parse_body(res->body, "POST /effects");
  if (res->status == 200) {
    ex.outcome = TransportOutcome::AckReceived;
  } else if (res->status == 409 && ex.response_body.is_object() &&
             ex.response_body.value("delivery", "") == "fenced_out") {
    ex.outcome = TransportOutcome::FencedOut;
  } else if (res->status == 409 || res->status == 422) {
    ex.outcome = TransportOutcome::Rejected;
  } else {
    throw InfrastructureError("POST /effects answered " + std::to_string(res->status) + ": " + res->body);
  }
  return ex;
}

HttpExchange HttpRemote::status(const std::string& operation_id, std::int64_t logical_time_s) {
  httplib::Headers headers = {{"X-Logical-Time", std::to_string(logical_time_s)}};
  const std::string path = "/status/" + operation_id;
  HttpExchange ex;
  ex.request = {{"method", "GET"}, {"path", path}, {"headers", headers_json(headers)}};
  const auto start = Clock::now();
  auto res = client_->Get(path, headers);
  ex.duration_us = micros_since(start);
  if (!res) throw InfrastructureError("GET " + base_url_ + path + " failed: " + failure_reason(res.error(), base_url_));
  if (res->status != 200) {
    throw InfrastructureError("GET " + path + " answered " + std::to_string(res->status) + ": " + res->body);
  }
  ex.http_status = res->status;
  ex.response_body = parse_body(res->body, "GET /status");
  return ex;
}

HttpExchange HttpRemote::gc(const std::string& operation_id, std::int64_t logical_time_s) {
  httplib::Headers headers = {{"X-Logical-Time", std::to_string(logical_time_s)}};
  const std::string path = "/maintenance/gc/" + operation_id;
  HttpExchange ex;
  ex.request = {{"method", "POST"}, {"path", path}, {"headers", headers_json(headers)}};
  const auto start = Clock::now();
  auto res = client_->Post(path, headers, "{}", "application/json");
  ex.duration_us = micros_since(start);
  if (!res) throw InfrastructureError("POST " + base_url_ + path + " failed: " + httplib::to_string(res.error()));
  if (res->status != 200) {
    throw InfrastructureError("POST " + path + " answered " + std::to_string(res->status) + ": " + res->body);
  }
  ex.http_status = res->status;
  ex.response_body = parse_body(res->body, "POST /maintenance/gc");
  if (!ex.response_body.is_object()) throw InfrastructureError("POST /maintenance/gc answered a non-object");
  return ex;
}

nlohmann::json HttpRemote::health() {
  auto res = client_->Get("/health");
  if (!res) {
    throw InfrastructureError("GET " + base_url_ + "/health failed: " + failure_reason(res.error(), base_url_));
  }
  if (res->status != 200) throw InfrastructureError("GET /health answered " + std::to_string(res->status));
  return parse_body(res->body, "GET /health");
}

}  // namespace skewbench::infra
