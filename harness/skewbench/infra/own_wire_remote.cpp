#include "infra/own_wire_remote.hpp"

#include <algorithm>
#include <stdexcept>

#include "common/errors.hpp"
#include "common/json_reader.hpp"
#include "common/text.hpp"

namespace skewbench::infra {
namespace {

using nlohmann::json;
namespace protocol = remote_effect;

constexpr const char* kNoSinkCall =
    "the service performs its effect without calling {sink_url}, or the target's $.sink.operation_id does not find "
    "the operation in its calls";

// The answer's body for the evidence: its JSON, or its text (shortened) when
// it is not JSON.
json body_for_evidence(const std::string& body) {
  try {
    return parse_bounded_json(body);
  } catch (const std::exception&) {
    return text::short_prefix(body);
  }
}

}  // namespace

bool PostTally::claim_applied(const std::string& operation_id, std::int64_t applied_now) {
  std::lock_guard lock(mutex_);
  auto& claimed = claimed_[operation_id];
  if (applied_now <= claimed) return false;
  ++claimed;
  return true;
}

void PostTally::add(const std::string& operation_id) {
  std::lock_guard lock(mutex_);
  ++taken_[operation_id];
}

std::int64_t PostTally::of(const std::string& operation_id) const {
  std::lock_guard lock(mutex_);
  const auto found = taken_.find(operation_id);
  return found == taken_.end() ? 0 : found->second;
}

std::string render_template(std::string_view text, const std::map<std::string, std::string>& values) {
  for (const auto& name : text::placeholders_in(text)) {
    if (!values.contains(name)) {
      throw std::invalid_argument(
          name + " is not a placeholder of a request (" +
          text::join(std::vector<std::string>(std::begin(kRequestPlaceholders), std::end(kRequestPlaceholders)), ", ") +
          ")");
    }
  }
  return text::expand_placeholders(text, values, false);
}

bool carries_amount(const OwnWire& wire) {
  constexpr std::string_view kAmount = "{amount}";
  return wire.path.find(kAmount) != std::string::npos || wire.body.find(kAmount) != std::string::npos ||
         std::any_of(wire.headers.begin(), wire.headers.end(),
                     [&](const auto& header) { return header.second.find(kAmount) != std::string::npos; });
}

AnswerClass classify_answer(const OwnWire& wire, int status, const std::string& body) {
  if (wire.json_pointer) {
    if (const auto value = value_at_pointer(body, *wire.json_pointer); value && value->is_string()) {
      if (const auto found = wire.by_value.find(value->get<std::string>()); found != wire.by_value.end()) {
        return found->second;
      }
    }
  }
  const auto found = wire.by_status.find(status);
  return found == wire.by_status.end() ? AnswerClass::error : found->second;
}

OwnWireRemote::OwnWireRemote(OwnWire wire, const std::string& driver_url, HttpLimits limits, const EffectSink& sink,
                             PostTally& tally, const FaultCounts* proxy_counts)
    : wire_(std::move(wire)),
      driver_url_(driver_url),
      limits_(limits),
      sink_(&sink),
      tally_(&tally),
      proxy_counts_(proxy_counts) {}

protocol::StatusAnswer OwnWireRemote::counted(const std::string& operation_id) const {
  const auto effects = sink_->applied(operation_id);
  const auto dropped = proxy_counts_ ? proxy_counts_->of(operation_id).ack_drops : 0;
  protocol::StatusAnswer answer;
  answer.operation_id = operation_id;
  answer.status = protocol::operation_status(static_cast<std::size_t>(effects));
  answer.effect_count = effects;
  answer.post_requests = tally_->of(operation_id) + dropped;
  answer.ack_drops = dropped;
  return answer;
}

OwnWireRemote::Lease::Lease(OwnWireRemote& remote) : remote_(&remote) {
  const std::lock_guard lock(remote.transports_mutex_);
  if (!remote.idle_transports_.empty()) {
    transport_ = std::move(remote.idle_transports_.back());
    remote.idle_transports_.pop_back();
    return;
  }
  transport_ = std::make_unique<HttpRemote>(remote.driver_url_, remote.limits_,
                                            WireOptions{.sends_logical_time = false, .ack_loss = AckLoss::proxy});
}

OwnWireRemote::Lease::~Lease() {
  const std::lock_guard lock(remote_->transports_mutex_);
  remote_->idle_transports_.push_back(std::move(transport_));
}

PostExchange OwnWireRemote::post_effect(const PostEffectRequest& r) {
  const std::map<std::string, std::string> values = {{"{operation_id}", r.operation_id},
                                                     {"{idempotency_key}", r.idempotency_key},
                                                     {"{amount}", std::to_string(r.amount)}};
  const auto path = render_template(wire_.path, values);
  std::vector<std::pair<std::string, std::string>> headers = {{wire_.key_header, r.idempotency_key}};
  for (const auto& [name, value] : wire_.headers) headers.emplace_back(name, render_template(value, values));
  const auto body = render_template(wire_.body, values);
  auto wire_headers = headers;
  // For the fault proxy only, which removes both before the service sees them.
  wire_headers.emplace_back(std::string(kOperationHeader), r.operation_id);
  if (r.drop_ack) wire_headers.emplace_back(std::string(kFaultHeader), "drop_ack");
  PostExchange ex{sent(wire_.method, path, headers, body), {}};
  const auto proxy_before = proxy_counts_ ? proxy_counts_->of(r.operation_id) : ProxyCounts{};
  const auto dropped_before = proxy_before.ack_drops;
  const SinkBefore before{.applied = sink_->applied(r.operation_id), .calls = sink_->call_count()};
  const Lease transport(*this);
  const auto answer = [&] {
    try {
      return transport->exchange(wire_.method, path, wire_headers, body);
    } catch (const InfrastructureError& e) {
      throw InfrastructureError("target " + wire_.target + ": " + e.what());  // no answer within the deadline
    }
  }();
  ex.duration_us = answer.waited_us;
  if (!answer.answered()) {
    if (r.drop_ack && answer.error == httplib::Error::Read && !answer.head_received) {
      ex.outcome = TransportOutcome::AckUnknown;
      ex.answer.snapshot = counted(r.operation_id);
      // The proxy drops a 2xx it read. Without one, the service gave no
      // answer (it closed the connection, or died), or one that said it did
      // not take the request: either way not a lost acknowledgement.
      if (proxy_counts_ != nullptr && *ex.answer.snapshot.ack_drops == dropped_before) {
        const bool closed = proxy_counts_->of(r.operation_id).unanswered > proxy_before.unanswered;
        throw InfrastructureError(
            "target " + wire_.target + ": " + wire_.method + " " + path + " (drop_ack by the fault proxy): " +
            (closed ? "the service closed the connection without an answer, so the fault proxy had none to drop"
                    : "the service's answer was not 2xx (it did not take the request), and the fault proxy "
                      "dropped it"));
      }
      // The proxy read a 2xx before it dropped it: the service says it took
      // the request, so the sink must hold its effect.
      if (*ex.answer.snapshot.ack_drops > dropped_before && *ex.answer.snapshot.effect_count == 0) {
        throw InfrastructureError("target " + wire_.target + ": " + wire_.method + " " + path +
                                  " was answered 2xx (the fault proxy read it, then dropped it) but the effect sink "
                                  "holds no applied call for operation " +
                                  r.operation_id + ": " + no_sink_call(before));
      }
      return ex;
    }
    throw InfrastructureError("target " + wire_.target + ": " + transport->name(wire_.method, path) +
                              (r.drop_ack ? " (drop_ack by the fault proxy)" : "") + ": " +
                              transport->describe_failure(answer) +
                              (r.drop_ack ? "" : "; this POST was not meant to lose its answer"));
  }
  return read_answer(std::move(ex), answer, r, before);
}

std::string OwnWireRemote::no_sink_call(const SinkBefore& before) const {
  const auto calls = sink_->calls();
  std::string out = kNoSinkCall;
  if (calls.size() <= before.calls) return out + "; the sink took no call while it was in flight";
  out += "; the sink's calls while it was in flight:";
  constexpr std::size_t kShown = 3;
  for (auto i = before.calls; i < calls.size() && i < before.calls + kShown; ++i) {
    const auto& call = calls[i];
    out += std::string(i == before.calls ? " " : ", ") + call.method + " " + text::short_prefix(call.path) + " (" +
           (call.operation_id ? "operation id read: \"" + text::short_prefix(*call.operation_id) + "\""
                              : std::string("no operation id where $.sink.operation_id says")) +
           ", " + std::string(kSinkAnswers.name(call.answer)) + ")";
  }
  if (calls.size() > before.calls + kShown) out += ", ...";
  return out;
}

PostExchange OwnWireRemote::read_answer(PostExchange ex, const http::Exchange& answer, const PostEffectRequest& r,
                                        const SinkBefore& before) {
  ex.http_status = answer.status;
  ex.response_body = body_for_evidence(answer.body);
  auto kind = classify_answer(wire_, answer.status, answer.body);
  if (kind == AnswerClass::applied_or_replayed) {
    // The answer does not say whether the service performed the effect now
    // (a library that replays its first answer as it was sent): the sink
    // does. Applied when it took a call for the operation while the request
    // was in flight, and no other answer was read as that call's; replayed
    // otherwise, which holds only if it holds one.
    const auto applied_now = sink_->applied(r.operation_id);
    kind = applied_now > before.applied && tally_->claim_applied(r.operation_id, applied_now) ? AnswerClass::applied
                                                                                              : AnswerClass::replayed;
    ex.harness = {{"answer_rule", kAnswerClasses.name(AnswerClass::applied_or_replayed)}};
  }
  ex.harness["answer_class"] = kAnswerClasses.name(kind);
  const auto where = "target " + wire_.target + ": " + wire_.method + " " + ex.request["path"].get<std::string>();
  switch (kind) {
    case AnswerClass::error:
      if (provider_failed(r.operation_id)) {
        // The sink failed the provider's call and holds none applied: the
        // service passed the failure on (now, or replaying it).
        ex.outcome = TransportOutcome::ProviderFailed;
        ex.harness["provider_failed"] = true;
        break;
      }
      throw InfrastructureError(
          where + " answered " + std::to_string(answer.status) +
          ", which its target file classifies as an error (or does not list): " + text::short_prefix(answer.body));
    case AnswerClass::applied:
    case AnswerClass::replayed:
    case AnswerClass::applied_or_replayed:  // resolved above
      check_delivery(where + " answered " + std::to_string(answer.status), kind, r, before);
      tally_->add(r.operation_id);
      ex.outcome = TransportOutcome::AckReceived;
      ex.answer.delivery =
          kind == AnswerClass::applied ? protocol::Delivery::applied : protocol::Delivery::deduplicated;
      break;
    case AnswerClass::refused_in_progress:
      ex.outcome = TransportOutcome::Rejected;
      ex.answer.delivery = protocol::Delivery::refused_other_operation;
      ex.answer.error = "in_progress";
      break;
    case AnswerClass::refused_mismatch:
      ex.outcome = TransportOutcome::Rejected;
      ex.answer.delivery = protocol::Delivery::refused_different_payload;
      ex.answer.error = "payload_mismatch";
      break;
  }
  ex.answer.idempotency_key = r.idempotency_key;
  ex.answer.snapshot = counted(r.operation_id);
  ex.harness["counted_by_skewbench"] = {{"effect_count", *ex.answer.snapshot.effect_count},
                                        {"post_requests", *ex.answer.snapshot.post_requests},
                                        {"ack_drops", *ex.answer.snapshot.ack_drops}};
  return ex;
}

void OwnWireRemote::check_delivery(const std::string& answered, AnswerClass kind, const PostEffectRequest& r,
                                   const SinkBefore& before) {
  const auto applied = sink_->applied(r.operation_id);
  if (applied == 0) {
    throw InfrastructureError(answered + " (" + std::string(kAnswerClasses.name(kind)) +
                              ") but the effect sink holds no applied call for operation " + r.operation_id + ": " +
                              no_sink_call(before));
  }
  if (kind != AnswerClass::applied) return;
  // Applied means the service performed the effect for this request: the
  // sink took a call for it while the request was in flight. A replay may or
  // may not call the provider; the sink counts whatever it did.
  if (applied <= before.applied) {
    throw InfrastructureError(answered + " (applied) but the effect sink took no call for operation " + r.operation_id +
                              " while it was in flight (it holds " + std::to_string(before.applied) +
                              " applied, as before the request): the service says it performed an effect its "
                              "provider never saw");
  }
  tally_->claim_applied(r.operation_id, applied);
}

bool OwnWireRemote::provider_failed(const std::string& operation_id) const {
  if (sink_->applied(operation_id) > 0) return false;
  const auto calls = sink_->calls();
  return std::any_of(calls.begin(), calls.end(), [&](const SinkCall& call) {
    return call.operation_id == operation_id &&
           (call.answer == SinkAnswer::fail_500 || call.answer == SinkAnswer::reset ||
            call.answer == SinkAnswer::no_answer);
  });
}

StatusExchange OwnWireRemote::status(const std::string& operation_id, std::int64_t /*logical_time_s*/) {
  StatusExchange ex;
  ex.request = {
      {"method", "READ"}, {"path", "effect sink: calls for operation " + operation_id}, {"headers", json::object()}};
  ex.answer = counted(operation_id);
  ex.response_body = {{"operation_id", operation_id},
                      {"status", protocol::kOperationStatuses.name(*ex.answer.status)},
                      {"effect_count", *ex.answer.effect_count},
                      {"post_requests", *ex.answer.post_requests},
                      {"ack_drops", *ex.answer.ack_drops}};
  ex.harness = {{"counted_by_skewbench", true}};
  return ex;
}

HealthExchange OwnWireRemote::health() {
  HealthExchange out;
  out.body = {{"service", wire_.target}, {"wire", "own"}};
  out.answer.service = wire_.target;
  return out;
}

GcExchange OwnWireRemote::gc(const std::string& operation_id, std::int64_t /*logical_time_s*/) {
  throw InfrastructureError("target " + wire_.target + ": a gc step for " + operation_id +
                            " needs POST /maintenance/gc of skewbench's protocol, which a service's own wire has not");
}

}  // namespace skewbench::infra
