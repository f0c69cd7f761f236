#include "infra/remote_decorators.hpp"

#include "common/errors.hpp"

namespace skewbench::infra {
namespace {

// Records the clock set and the time the service judged at; throws when they differ.
void check_clock(HttpExchange& exchange, std::int64_t set_s, const std::optional<std::int64_t>& judged_at_s,
                 const std::string& what) {
  if (exchange.harness.is_null()) exchange.harness = nlohmann::json::object();
  exchange.harness["process_clock_s"] = set_s;
  exchange.harness["judged_at_s"] = judged_at_s ? nlohmann::json(*judged_at_s) : nlohmann::json(nullptr);
  if (judged_at_s && *judged_at_s != set_s) {
    throw InfrastructureError(what + ": the service judged the request at " + std::to_string(*judged_at_s) +
                              " s, but its process clock was set to " + std::to_string(set_s) +
                              " s: it does not read the clock skewbench drives (see docs/real-clocks.md, \"What "
                              "libfaketime does not reach\")");
  }
}

}  // namespace

PostExchange ClockedRemote::post_effect(const PostEffectRequest& request) {
  clock_->set(request.logical_time_s);
  auto exchange = inner().post_effect(request);
  const bool answered = exchange.http_status == 200;
  check_clock(exchange, request.logical_time_s,
              answered ? exchange.answer.snapshot.evaluation_time_s : std::optional<std::int64_t>(), "POST /effects");
  return exchange;
}

StatusExchange ClockedRemote::status(const std::string& operation_id, std::int64_t logical_time_s) {
  clock_->set(logical_time_s);
  auto exchange = inner().status(operation_id, logical_time_s);
  check_clock(exchange, logical_time_s, exchange.answer.evaluation_time_s, "GET /status/" + operation_id);
  return exchange;
}

GcExchange ClockedRemote::gc(const std::string& operation_id, std::int64_t logical_time_s) {
  clock_->set(logical_time_s);
  auto exchange = inner().gc(operation_id, logical_time_s);
  check_clock(exchange, logical_time_s, exchange.answer.logical_time_s, "POST /maintenance/gc/" + operation_id);
  return exchange;
}

void ProxiedRemote::add_proxy_drops(remote_effect::StatusAnswer& answer, const std::string& operation_id,
                                    HttpExchange& exchange) const {
  const auto dropped = counts_->of(operation_id).ack_drops;
  if (exchange.harness.is_null()) exchange.harness = nlohmann::json::object();
  exchange.harness["service_ack_drops"] =
      answer.ack_drops ? nlohmann::json(*answer.ack_drops) : nlohmann::json(nullptr);
  exchange.harness["fault_proxy_ack_drops"] = dropped;
  answer.ack_drops = answer.ack_drops.value_or(0) + dropped;
  // The body as seen through the proxy: the service's own count is kept above.
  if (exchange.response_body.is_object()) exchange.response_body["ack_drops"] = *answer.ack_drops;
}

PostExchange ProxiedRemote::post_effect(const PostEffectRequest& request) {
  auto exchange = inner().post_effect(request);
  if (exchange.http_status == 200) add_proxy_drops(exchange.answer.snapshot, request.operation_id, exchange);
  return exchange;
}

StatusExchange ProxiedRemote::status(const std::string& operation_id, std::int64_t logical_time_s) {
  auto exchange = inner().status(operation_id, logical_time_s);
  add_proxy_drops(exchange.answer, operation_id, exchange);
  return exchange;
}

}  // namespace skewbench::infra
