// Every closed vocabulary spells each value once, reads its own spellings
// back, and refuses a word outside it instead of falling back to a default.

#include <set>
#include <string>

#include <catch2/catch_test_macros.hpp>

#include "common/vocabulary.hpp"
#include "compare/compare.hpp"
#include "infra/ports.hpp"
#include "policy/temporal.hpp"
#include "published/published.hpp"
#include "remote_effect/protocol.hpp"
#include "runner/stack.hpp"
#include "scenario/verdict.hpp"
#include "steps/step.hpp"

namespace {

using namespace skewbench;

template <typename V>
void check_closed(const V& vocabulary, std::size_t expected_size) {
  const auto names = vocabulary.names();
  REQUIRE(names.size() == expected_size);
  CHECK(std::set<std::string>(names.begin(), names.end()).size() == names.size());
  for (const auto value : vocabulary.values()) {
    const auto spelling = vocabulary.name(value);
    INFO(spelling);
    CHECK(spelling != "INVALID");
    CHECK(!spelling.empty());
    REQUIRE(vocabulary.parse(spelling));
    CHECK(*vocabulary.parse(spelling) == value);
  }
  CHECK_FALSE(vocabulary.parse(""));
  CHECK_FALSE(vocabulary.parse("no such word"));
  // Case matters: the wire and the files spell a word one way.
  for (const auto& name : names) {
    std::string other = name;
    for (auto& c : other) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 32 : (c >= 'A' && c <= 'Z' ? c + 32 : c));
    if (other != name) CHECK_FALSE(vocabulary.parse(other));
  }
}

}  // namespace

TEST_CASE("every vocabulary is closed: one spelling a value, read back, nothing else accepted") {
  check_closed(remote_effect::kDedupeModes, 2);
  check_closed(remote_effect::kDeliveries, 5);
  check_closed(policy::kTemporalStates, 3);
  check_closed(policy::kDecisions, 3);
  check_closed(policy::kReconcileActions, 3);
  check_closed(infra::kTransportOutcomes, 5);
  check_closed(compare::kRowStatuses, 3);
  check_closed(scenario::kVerdicts, 4);
  check_closed(runner::kDurabilities, 2);
  check_closed(remote_effect::kOperationStatuses, 3);
  check_closed(steps::kRetryIdentities, 2);
  check_closed(published::kCheckStatuses, 5);
  check_closed(infra::kOutboxStatuses, 3);
  check_closed(infra::kBusinessStates, 2);
}

TEST_CASE("the spellings are the wire's and the evidence's words") {
  CHECK(remote_effect::dedupe_mode_name(remote_effect::DedupeMode::volatile_) == "volatile");
  CHECK(remote_effect::dedupe_mode_name(remote_effect::kDefaultDedupeMode) == "durable");
  CHECK(remote_effect::delivery_name(remote_effect::Delivery::fenced_out) == remote_effect::kDeliveryFencedOut);
  CHECK(policy::to_string(policy::TemporalState::TimeUnknown) == "TIME_UNKNOWN");
  CHECK(infra::to_string(infra::TransportOutcome::AckUnknown) == "ACK_UNKNOWN");
  CHECK(scenario::verdict_words() == "SAFE, CONFLICT, HELD or ERROR");
  CHECK(runner::kDurabilities.listed() == "durable or throwaway");
  CHECK(remote_effect::status_name(2) == "conflict");
  CHECK(steps::to_string(steps::RetryIdentity::NewKeyPerAttempt) == "new_key_per_attempt");
  CHECK(published::kCheckStatuses.name(published::CheckStatus::NotMeasured) == "not_measured");
}
