#include "infra/ports.hpp"

#include "common/errors.hpp"

namespace skewbench::infra {
namespace {

// The protocol's reader over one answer body, its errors as infrastructure
// errors that name the request.
template <typename Read>
auto read_answer(const nlohmann::json& body, const std::string& what, Read read) {
  try {
    return read(body);
  } catch (const remote_effect::AnswerError& e) {
    throw InfrastructureError(what + " answered, but " + e.what());
  }
}

}  // namespace

nlohmann::json HttpExchange::to_json() const { return HttpExchange(*this).release_json(); }

nlohmann::json HttpExchange::release_json() {
  nlohmann::json out = {{"request", std::move(request)},
                        {"http_status", http_status ? nlohmann::json(*http_status) : nlohmann::json(nullptr)},
                        {"response", std::move(response_body)},
                        {"transport_outcome", outcome ? nlohmann::json(to_string(*outcome)) : nlohmann::json(nullptr)},
                        {"duration_us", duration_us}};
  if (!harness.is_null()) out["harness"] = std::move(harness);
  request = nullptr;
  response_body = nullptr;
  harness = nullptr;
  return out;
}

HttpExchange sent(std::string method, std::string path, const std::vector<std::pair<std::string, std::string>>& headers,
                  const std::optional<std::string>& body) {
  nlohmann::json written = nlohmann::json::object();
  for (const auto& [name, value] : headers) written[name] = value;
  HttpExchange out;
  out.request = {{"method", std::move(method)}, {"path", std::move(path)}, {"headers", std::move(written)}};
  if (body) out.request["body"] = *body;
  return out;
}

PostExchange read_post(HttpExchange exchange, TransportOutcome outcome, const std::string& what) {
  PostExchange out{std::move(exchange), {}};
  out.outcome = outcome;
  if (!out.response_body.is_null()) out.answer = read_answer(out.response_body, what, remote_effect::read_post_answer);
  return out;
}

StatusExchange read_status(HttpExchange exchange, const std::string& what) {
  StatusExchange out{std::move(exchange), {}};
  out.answer = read_answer(out.response_body, what, remote_effect::read_status_answer);
  return out;
}

GcExchange read_gc(HttpExchange exchange, const std::string& what) {
  GcExchange out{std::move(exchange), {}};
  out.answer = read_answer(out.response_body, what, remote_effect::read_gc_answer);
  return out;
}

HealthExchange read_health(nlohmann::json body, const std::string& what) {
  auto answer = read_answer(body, what, remote_effect::read_health_answer);
  return HealthExchange{std::move(body), std::move(answer)};
}

nlohmann::json OutboxRow::to_json() const {
  auto opt = [](const auto& v) -> nlohmann::json { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  return {
      {"operation_id", operation_id},
      {"business_state", to_string(business_state)},
      {"business_version", business_version},
      {"idempotency_key", idempotency_key},
      {"ttl_s", ttl_s},
      {"key_created_at_s", opt(key_created_at_s)},
      {"key_expires_at_s", opt(key_expires_at_s)},
      {"status", to_string(status)},
      {"delivery_attempts", delivery_attempts},
      {"last_transport_outcome", opt(last_transport_outcome)},
      {"delivered_at_s", opt(delivered_at_s)},
  };
}

}  // namespace skewbench::infra
