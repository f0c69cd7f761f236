// The step kinds that make requests overlap, without sleeping: a POST whose
// provider call skewbench's effect sink holds (post_held), POSTs sent while
// it is held or all at once (post_concurrent), and the release that lets the
// held call through and collects every answer (release_provider). Each POST
// in flight runs on a thread of its own; the step that sent it waits on
// events (the sink holds the call, the answer arrived), each bounded, and a
// later step collects what is still in flight. Only a service whose effects
// are calls to the sink (a target of its own wire) can run them.

#include <algorithm>
#include <chrono>
#include <future>

#include "common/errors.hpp"
#include "common/text.hpp"
#include "steps/step.hpp"

namespace skewbench::steps {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

// How long a service may take to call its provider for a held POST, and to
// answer a POST in flight once its provider call is released: beyond either,
// the scenario is ERROR naming the step.
constexpr milliseconds kProviderCallWithin{30'000};
constexpr milliseconds kAnswerAfterReleaseWithin{60'000};
// How long post_concurrent waits for its answers by default before it leaves
// them in flight.
constexpr std::int64_t kDefaultAnswerWithinMs = 5000;
constexpr std::int64_t kMaxAnswerWithinMs = 60000;
constexpr std::int64_t kMaxConcurrentPosts = 64;

infra::EffectSink& sink_of(const StepContext& ctx, std::string_view kind) {
  if (ctx.effect_sink == nullptr) {
    throw InfrastructureError(std::string(kind) +
                              " needs a service whose provider calls reach skewbench's effect sink (a target of "
                              "its own wire); this service performs its effect itself");
  }
  return *ctx.effect_sink;
}

// The provider calls of the operation the sink holds now.
std::size_t held_calls(const infra::EffectSink& sink, const std::string& operation_id) {
  const auto calls = sink.calls();
  return static_cast<std::size_t>(std::count_if(calls.begin(), calls.end(), [&](const infra::SinkCall& call) {
    return call.operation_id == operation_id && call.fault == infra::SinkFaultKind::hold &&
           call.answer == infra::SinkAnswer::pending;
  }));
}

// Sends the scenario's POST from a thread of its own once `gate` opens; the
// outbox records the attempt first, as deliver() does.
InFlightPost send(StepContext& ctx, const std::string& node, LogicalSeconds time_s, std::string_view kind,
                  std::shared_future<void> gate) {
  auto& remote = ctx.remote_of(node);
  ctx.outbox.record_attempt(ctx.operation_id, time_s);
  InFlightPost post{.step_index = ctx.step_index,
                    .step_kind = std::string(kind),
                    .node = node,
                    .logical_time_s = time_s,
                    .key = ctx.next_delivery_key(),
                    .answer = {}};
  const infra::PostEffectRequest request{.operation_id = ctx.operation_id,
                                         .idempotency_key = post.key.wire,
                                         .ttl_s = ctx.ttl_s,
                                         .logical_time_s = time_s,
                                         .drop_ack = false,
                                         .body = ctx.payload,
                                         .expected_temporal_epoch = std::nullopt};
  post.answer = std::async(std::launch::async, [&remote, request, gate = std::move(gate)] {
    gate.wait();
    return remote.post_effect(request);
  });
  return post;
}

std::shared_future<void> open_gate() {
  std::promise<void> open;
  open.set_value();
  return open.get_future().share();
}

// How the answers a step collected read, counted.
struct Answers {
  std::int64_t answered = 0;
  std::int64_t applied = 0;
  std::int64_t replayed = 0;
  std::int64_t refused = 0;

  void add_to(json& observed) const {
    observed["answered"] = answered;
    observed["applied_answers"] = applied;
    observed["replayed_answers"] = replayed;
    observed["refused_answers"] = refused;
  }
};

// Takes the answer of `post` (which has arrived): the exchange into the
// step's evidence, with the step that sent it; the outcome into the outbox and
// the ledger, as deliver() records one.
void record(StepContext& ctx, const InFlightPost& post, infra::PostExchange ex, StepOutcome& out, Answers& answers) {
  const auto outcome = ex.transport_outcome();
  const bool delivered = outcome == infra::TransportOutcome::AckReceived;
  if (delivered) ++ctx.ledger.post_requests;
  ctx.outbox.record_outcome(ctx.operation_id, outcome, delivered, post.logical_time_s);
  ++answers.answered;
  if (delivered && ex.answer.delivery == remote_effect::Delivery::applied) ++answers.applied;
  if (delivered && ex.answer.delivery == remote_effect::Delivery::deduplicated) ++answers.replayed;
  if (outcome == infra::TransportOutcome::Rejected) ++answers.refused;
  auto exchange = ex.release_json();
  exchange["harness"]["sent_by_step"] = post.step_index;
  exchange["harness"]["sent_at_s"] = post.logical_time_s;
  out.exchanges.push_back(std::move(exchange));
}

void collect(StepContext& ctx, InFlightPost& post, StepOutcome& out, Answers& answers) {
  infra::PostExchange ex;
  try {
    ex = post.answer.get();
  } catch (const InfrastructureError& e) {
    throw InfrastructureError("the POST step " + std::to_string(post.step_index) + " (" + post.step_kind +
                              ") sent: " + e.what());
  }
  record(ctx, post, std::move(ex), out, answers);
}

// With nothing left in flight, the counts skewbench holds for the operation
// must be what the scenario sent.
void check_ledger(StepContext& ctx, std::string_view kind) {
  if (!ctx.in_flight.empty()) return;
  auto ex = ctx.first().status(ctx.operation_id, ctx.step_reference_s);
  ctx.checked_snapshot(ex.answer, std::string(kind) + ": once every POST was answered,");
}

// --- post_held -------------------------------------------------------------

// The scenario's POST, with its provider call held at the sink: the step ends
// once the sink holds the call, the POST still in flight. A service that
// answers without calling its provider is measured as it answered.
class PostHeldStep final : public Step {
 public:
  PostHeldStep(LogicalSeconds at_s, std::string node) : Step(at_s), node_(std::move(node)) {}
  std::string_view kind() const override { return "post_held"; }
  StepRole role() const override { return StepRole::Delivery; }
  std::optional<std::string> node() const override { return node_; }
  StepNeeds needs() const override { return {.provider_control = true, .holds_provider_call = true}; }

  StepOutcome execute(StepContext& ctx) const override {
    auto& sink = sink_of(ctx, kind());
    const auto time_s = ctx.read_clock(node_, at_s());
    const auto held_before = held_calls(sink, ctx.operation_id);
    sink.arm({.kind = infra::SinkFaultKind::hold, .operation_id = ctx.operation_id, .calls = 1, .delay_ms = 0});
    auto post = send(ctx, node_, time_s, kind(), open_gate());
    StepOutcome out;
    out.observed = {{"logical_time_s", time_s},
                    {"idempotency_key", post.key.name},
                    {"attempt", post.key.attempt},
                    {"provider_call", "held"}};
    const auto deadline = std::chrono::steady_clock::now() + kProviderCallWithin;
    constexpr milliseconds kSlice{20};
    while (std::chrono::steady_clock::now() < deadline) {
      if (sink.wait_until_held(ctx.operation_id, held_before + 1, kSlice)) {
        ctx.in_flight.push_back(std::move(post));
        return out;
      }
      if (post.answer.wait_for(milliseconds(0)) == std::future_status::ready) break;
    }
    sink.disarm_all();
    if (post.answer.wait_for(milliseconds(0)) != std::future_status::ready) {
      ctx.in_flight.push_back(std::move(post));
      throw InfrastructureError("the service neither called its provider for the POST nor answered it within " +
                                std::to_string(kProviderCallWithin.count() / 1000) + " s");
    }
    // Answered without a provider call (a replay, a refusal): as it answered.
    out.observed["provider_call"] = "not_called";
    Answers answers;
    collect(ctx, post, out, answers);
    answers.add_to(out.observed);
    check_ledger(ctx, kind());
    return out;
  }

 private:
  std::string node_;
};

// --- post_concurrent -------------------------------------------------------

// `count` POSTs of the scenario's request from one node, sent at once; the
// step waits up to `answer_within_ms` for their answers, and leaves the ones
// not in by then in flight (a service that blocks them behind the first
// request), for release_provider to collect.
class PostConcurrentStep final : public Step {
 public:
  PostConcurrentStep(LogicalSeconds at_s, std::string node, std::int64_t count, std::int64_t answer_within_ms)
      : Step(at_s), node_(std::move(node)), count_(count), answer_within_ms_(answer_within_ms) {}
  std::string_view kind() const override { return "post_concurrent"; }
  StepRole role() const override { return StepRole::Delivery; }
  std::optional<std::string> node() const override { return node_; }
  json parameters() const override { return {{"count", count_}, {"answer_within_ms", answer_within_ms_}}; }
  StepNeeds needs() const override { return {.provider_control = true}; }

  StepOutcome execute(StepContext& ctx) const override {
    sink_of(ctx, kind());
    const auto time_s = ctx.read_clock(node_, at_s());
    std::promise<void> open;
    const auto gate = open.get_future().share();
    std::vector<InFlightPost> posts;
    for (std::int64_t i = 0; i < count_; ++i) posts.push_back(send(ctx, node_, time_s, kind(), gate));
    open.set_value();
    StepOutcome out;
    out.observed = {{"logical_time_s", time_s},
                    {"idempotency_key", posts.front().key.name},
                    {"attempt", posts.front().key.attempt},
                    {"sent", count_}};
    const auto deadline = std::chrono::steady_clock::now() + milliseconds(answer_within_ms_);
    Answers answers;
    for (auto& post : posts) {
      if (post.answer.wait_until(deadline) == std::future_status::ready) {
        collect(ctx, post, out, answers);
      } else {
        ctx.in_flight.push_back(std::move(post));
      }
    }
    answers.add_to(out.observed);
    out.observed["in_flight"] = count_ - answers.answered;
    check_ledger(ctx, kind());
    return out;
  }

 private:
  std::string node_;
  std::int64_t count_;
  std::int64_t answer_within_ms_;
};

// --- release_provider ------------------------------------------------------

// Answers every held provider call of the operation (200: applied), then
// waits for every POST in flight and collects its answer.
class ReleaseProviderStep final : public Step {
 public:
  explicit ReleaseProviderStep(LogicalSeconds at_s) : Step(at_s) {}
  std::string_view kind() const override { return "release_provider"; }
  StepRole role() const override { return StepRole::Fault; }
  StepNeeds needs() const override { return {.provider_control = true, .releases_provider_calls = true}; }

  StepOutcome execute(StepContext& ctx) const override {
    auto& sink = sink_of(ctx, kind());
    StepOutcome out;
    out.observed = {{"released_calls", static_cast<std::int64_t>(sink.release(ctx.operation_id))}};
    const auto deadline = std::chrono::steady_clock::now() + kAnswerAfterReleaseWithin;
    Answers answers;
    while (!ctx.in_flight.empty()) {
      auto& post = ctx.in_flight.front();
      if (post.answer.wait_until(deadline) != std::future_status::ready) {
        throw InfrastructureError("the POST step " + std::to_string(post.step_index) + " (" + post.step_kind +
                                  ") sent was not answered within " +
                                  std::to_string(kAnswerAfterReleaseWithin.count() / 1000) +
                                  " s of the release of its provider call");
      }
      auto taken = std::move(post);
      ctx.in_flight.erase(ctx.in_flight.begin());
      collect(ctx, taken, out, answers);
    }
    answers.add_to(out.observed);
    check_ledger(ctx, kind());
    return out;
  }
};

// --- fail_provider ---------------------------------------------------------

// The next provider call of the operation fails at the sink (500, or a TCP
// reset): not applied. A service that passes the failure on answers its POST
// with an error, read as PROVIDER_FAILED.
class FailProviderStep final : public Step {
 public:
  FailProviderStep(LogicalSeconds at_s, infra::SinkFaultKind fault) : Step(at_s), fault_(fault) {}
  std::string_view kind() const override { return "fail_provider"; }
  StepRole role() const override { return StepRole::Fault; }
  json parameters() const override { return {{"answer", kFailAnswers.name(fault_)}}; }
  StepNeeds needs() const override { return {.provider_control = true}; }

  StepOutcome execute(StepContext& ctx) const override {
    sink_of(ctx, kind()).arm({.kind = fault_, .operation_id = ctx.operation_id, .calls = 1, .delay_ms = 0});
    StepOutcome out;
    out.observed = {{"armed", infra::kSinkFaultKinds.name(fault_)}};
    return out;
  }

  // How the step's `answer` names the faults it arms.
  static constexpr auto kFailAnswers = vocabulary<infra::SinkFaultKind>(
      {{infra::SinkFaultKind::fail_500, "500"}, {infra::SinkFaultKind::reset, "reset"}});

 private:
  infra::SinkFaultKind fault_;
};

// --- kill_instance ---------------------------------------------------------

// The instance a node reaches dies (SIGKILL: a crash) and is started again on
// the same store and port. What it held in flight dies with it: its provider
// calls the sink holds end unanswered (dropped: not applied, the provider
// never performed them), and the POSTs in flight through it lose their
// answers (ACK_UNKNOWN, as a client whose connection broke reads them). The
// other instances, and the POSTs in flight through them, go on.
class KillInstanceStep final : public Step {
 public:
  KillInstanceStep(LogicalSeconds at_s, std::string node) : Step(at_s), node_(std::move(node)) {}
  std::string_view kind() const override { return "kill_instance"; }
  StepRole role() const override { return StepRole::Fault; }
  std::optional<std::string> node() const override { return node_; }
  StepNeeds needs() const override {
    return {.remote_control = true, .provider_control = true, .ends_node_in_flight = true};
  }

  StepOutcome execute(StepContext& ctx) const override {
    auto& sink = sink_of(ctx, kind());
    if (ctx.remote_control == nullptr) {
      throw InfrastructureError("kill_instance needs a service started by skewbench (no --remote-url)");
    }
    const auto time_s = ctx.read_clock(node_, at_s());
    StepOutcome out;
    Answers answers;
    // A POST the instance answered before it died is collected as any other:
    // an answer that lies is an ERROR, never a lost answer.
    // Taken one at a time: what stays in flight when one throws is abandoned
    // with the scenario, its held call released.
    while (auto answered = take_node_post(ctx, /*answered_only=*/true)) collect(ctx, *answered, out, answers);
    const auto index = ctx.node_instances.contains(node_) ? ctx.node_instances.at(node_) : std::size_t{0};
    const auto instance = ctx.remote_control->kill_instance(index);
    ctx.ledger.boot_ids = ctx.boot_ids();
    out.observed = {{"logical_time_s", time_s}, {"dropped_calls", static_cast<std::int64_t>(sink.drop_held(instance))}};
    std::int64_t lost = 0;
    while (auto taken = take_node_post(ctx, /*answered_only=*/false)) {
      auto& post = *taken;
      if (post.answer.wait_for(kAnswerAfterReleaseWithin) != std::future_status::ready) {
        throw InfrastructureError("the POST step " + std::to_string(post.step_index) + " (" + post.step_kind +
                                  ") sent was not ended within " +
                                  std::to_string(kAnswerAfterReleaseWithin.count() / 1000) +
                                  " s of the death of the instance it reached");
      }
      try {
        record(ctx, post, post.answer.get(), out, answers);  // its answer crossed the kill
      } catch (const InfrastructureError& e) {
        out.exchanges.push_back(lost_answer(ctx, post, e.what()));
        ++lost;
      }
    }
    answers.add_to(out.observed);
    out.observed["lost_answers"] = lost;
    check_ledger(ctx, kind());
    return out;
  }

 private:
  // The first POST in flight through the node's instance (answered already,
  // with `answered_only`), taken out of the context; nullopt when none is.
  std::optional<InFlightPost> take_node_post(StepContext& ctx, bool answered_only) const {
    const auto it = std::find_if(ctx.in_flight.begin(), ctx.in_flight.end(), [&](InFlightPost& post) {
      return post.node == node_ &&
             (!answered_only || post.answer.wait_for(milliseconds(0)) == std::future_status::ready);
    });
    if (it == ctx.in_flight.end()) return std::nullopt;
    auto post = std::move(*it);
    ctx.in_flight.erase(it);
    return post;
  }

  // A POST whose answer died with its instance: recorded as the outbox
  // records a lost acknowledgement, the effect perhaps performed.
  static json lost_answer(StepContext& ctx, const InFlightPost& post, const std::string& why) {
    ctx.outbox.record_outcome(ctx.operation_id, infra::TransportOutcome::AckUnknown, false, post.logical_time_s);
    // The request went over the target's wire on the POST's own thread,
    // which ended with the connection: what is known of it is its key.
    return {{"request", {{"idempotency_key", post.key.wire}}},
            {"http_status", nullptr},
            {"response", nullptr},
            {"transport_outcome", infra::to_string(infra::TransportOutcome::AckUnknown)},
            {"duration_us", 0},
            {"harness",
             {{"sent_by_step", post.step_index},
              {"sent_at_s", post.logical_time_s},
              {"idempotency_key", post.key.name},
              {"lost_with_instance", why}}}};
  }

  std::string node_;
};

// --- the kinds as registered -------------------------------------------------

ObservedFields answer_counts() {
  return {{"answered", integer()},
          {"applied_answers", integer()},
          {"replayed_answers", integer()},
          {"refused_answers", integer()}};
}

StepKind post_held_kind() {
  auto observed = answer_counts();
  observed.insert({{"logical_time_s", integer()},
                   {"idempotency_key", string_of({})},
                   {"attempt", integer()},
                   {"provider_call", string_of({"held", "not_called"})}});
  return {"post_held",
          "send the scenario's POST with its provider call held at skewbench's effect sink; the step ends once "
          "the sink holds it, the POST in flight until release_provider (a target of its own wire)",
          StepRole::Delivery, std::move(observed),
          [](ObjectReader& spec, LogicalSeconds at_s, const StepParseContext& ctx) -> std::unique_ptr<Step> {
            return std::make_unique<PostHeldStep>(at_s, require_node(spec, ctx));
          }};
}

StepKind post_concurrent_kind() {
  auto observed = answer_counts();
  observed.insert({{"logical_time_s", integer()},
                   {"idempotency_key", string_of({})},
                   {"attempt", integer()},
                   {"sent", integer()},
                   {"in_flight", integer()}});
  return {"post_concurrent",
          "send count POSTs of the scenario's request at once from the node, and wait up to answer_within_ms for "
          "their answers; the rest stay in flight until release_provider (a target of its own wire)",
          StepRole::Delivery, std::move(observed),
          [](ObjectReader& spec, LogicalSeconds at_s, const StepParseContext& ctx) -> std::unique_ptr<Step> {
            auto node = require_node(spec, ctx);
            const auto count = spec.optional_int_within("count", 1, kMaxConcurrentPosts).value_or(1);
            const auto within_ms =
                spec.optional_int_within("answer_within_ms", 1, kMaxAnswerWithinMs).value_or(kDefaultAnswerWithinMs);
            return std::make_unique<PostConcurrentStep>(at_s, std::move(node), count, within_ms);
          }};
}

StepKind release_provider_kind() {
  auto observed = answer_counts();
  observed.insert({"released_calls", integer()});
  return {"release_provider",
          "answer every provider call the effect sink holds for the operation (applied), then wait for every POST "
          "in flight and collect its answer",
          StepRole::Fault,
          std::move(observed),
          [](ObjectReader&, LogicalSeconds at_s, const StepParseContext&) -> std::unique_ptr<Step> {
            return std::make_unique<ReleaseProviderStep>(at_s);
          },
          /*takes_node=*/false};
}

StepKind fail_provider_kind() {
  return {"fail_provider",
          "the next provider call of the operation fails at skewbench's effect sink: answer \"500\" (default) or "
          "\"reset\" (a TCP reset); not applied (a target of its own wire)",
          StepRole::Fault,
          {{"armed", string_of({"fail_500", "reset"})}},
          [](ObjectReader& spec, LogicalSeconds at_s, const StepParseContext&) -> std::unique_ptr<Step> {
            const auto answer = spec.optional_string("answer").value_or("500");
            const auto fault = FailProviderStep::kFailAnswers.parse(answer);
            if (!fault)
              throw InputError(spec.child_path("answer"), "must be " + FailProviderStep::kFailAnswers.listed());
            return std::make_unique<FailProviderStep>(at_s, *fault);
          },
          /*takes_node=*/false};
}

StepKind kill_instance_kind() {
  auto observed = answer_counts();
  observed.insert({{"logical_time_s", integer()}, {"dropped_calls", integer()}, {"lost_answers", integer()}});
  return {"kill_instance",
          "kill the instance of the service the node reaches (SIGKILL) and start it again: its provider calls held "
          "at skewbench's effect sink are dropped (not applied), its POSTs in flight lose their answers "
          "(ACK_UNKNOWN) (a target of its own wire)",
          StepRole::Fault, std::move(observed),
          [](ObjectReader& spec, LogicalSeconds at_s, const StepParseContext& ctx) -> std::unique_ptr<Step> {
            return std::make_unique<KillInstanceStep>(at_s, require_node(spec, ctx));
          }};
}

}  // namespace

void add_in_flight_steps(StepRegistry& registry) {
  registry.add(fail_provider_kind());
  registry.add(kill_instance_kind());
  registry.add(post_held_kind());
  registry.add(post_concurrent_kind());
  registry.add(release_provider_kind());
}

std::optional<std::string> in_flight_left(const StepContext& context) {
  if (context.in_flight.empty()) return std::nullopt;
  const auto& post = context.in_flight.front();
  return "step " + std::to_string(post.step_index) + " (" + post.step_kind + ") sent a POST still in flight when " +
         "the scenario ended: a release_provider step after it collects its answer";
}

void abandon_in_flight(StepContext& context) {
  if (context.in_flight.empty()) return;
  if (context.effect_sink != nullptr) {
    context.effect_sink->release(context.operation_id);
    context.effect_sink->disarm_all();
  }
  for (auto& post : context.in_flight) {
    if (post.answer.valid()) post.answer.wait_for(kAnswerAfterReleaseWithin);
  }
  context.in_flight.clear();
}

}  // namespace skewbench::steps
