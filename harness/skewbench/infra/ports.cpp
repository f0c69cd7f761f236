#include "infra/ports.hpp"

namespace skewbench::infra {

nlohmann::json OutboxRow::to_json() const {
  auto opt = [](const auto& v) -> nlohmann::json { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  return {
      {"operation_id", operation_id},
      {"business_state", business_state},
      {"business_version", business_version},
      {"idempotency_key", idempotency_key},
      {"ttl_s", ttl_s},
      {"key_created_at_s", opt(key_created_at_s)},
      {"key_expires_at_s", opt(key_expires_at_s)},
      {"status", status},
      {"delivery_attempts", delivery_attempts},
      {"last_transport_outcome", opt(last_transport_outcome)},
      {"delivered_at_s", opt(delivered_at_s)},
  };
}

}  // namespace skewbench::infra
