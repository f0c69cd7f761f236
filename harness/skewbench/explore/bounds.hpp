#pragma once

// What `skewbench explore` may generate, and what must hold of every run, as
// data (docs/explore.md): a bounds file names the step kinds and how many,
// the ranges of TTLs, clock offsets and the gaps between steps, the number of
// nodes, the policies, and the invariants to check.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/vocabulary.hpp"

namespace skewbench::explore {

// An inclusive range of whole seconds, and the value shrinking moves toward
// (the one in the range closest to 0).
struct Range {
  std::int64_t min_s = 0;
  std::int64_t max_s = 0;
  std::int64_t shrink_target() const { return min_s > 0 ? min_s : (max_s < 0 ? max_s : 0); }
};

// What must hold of every scenario explore runs.
//  - at_most_one_effect: the remote holds at most one effect, for the
//    policies listed (those that claim to deduplicate).
//  - declared_authority_before_expiry: declared_authority never holds two
//    effects while every replay it made was judged at an authority time
//    before the key's expiry.
//  - no_verdict_on_error: an ERROR never carries a verdict, and a verdict
//    never carries an error.
//  - effects_within_posts: effects are at least the POSTs answered "applied"
//    and at most those plus the POSTs whose answer was lost (the count rule of
//    docs/evidence.md, counted from what skewbench sent and saw).
//  - runs_to_a_verdict: no scenario ends in ERROR.
//  - at_most_one_effect_within_ttl: no two effects while every POST was sent
//    before the first one's time plus the TTL, by the reference clock (true
//    time): what a library or service that keeps a key for its TTL promises,
//    whatever the clocks of its instances and its store read.
enum class InvariantKind {
  at_most_one_effect,
  at_most_one_effect_within_ttl,
  declared_authority_before_expiry,
  no_verdict_on_error,
  effects_within_posts,
  runs_to_a_verdict
};
inline constexpr auto kInvariantKinds =
    vocabulary<InvariantKind>({{InvariantKind::at_most_one_effect, "at_most_one_effect"},
                               {InvariantKind::at_most_one_effect_within_ttl, "at_most_one_effect_within_ttl"},
                               {InvariantKind::declared_authority_before_expiry, "declared_authority_before_expiry"},
                               {InvariantKind::no_verdict_on_error, "no_verdict_on_error"},
                               {InvariantKind::effects_within_posts, "effects_within_posts"},
                               {InvariantKind::runs_to_a_verdict, "runs_to_a_verdict"}});

struct Invariant {
  InvariantKind kind = InvariantKind::at_most_one_effect;
  // at_most_one_effect and at_most_one_effect_within_ttl: the policies (by
  // name) it holds for; empty: every one.
  std::vector<std::string> policies;
  std::string name() const { return std::string(kInvariantKinds.name(kind)); }
};

// The step kinds a generated scenario may use after its commit_operation and
// its first post_effect, which every generated scenario has. The last two
// restart a process of the service (every instance, or its store): they run
// on the real engine and against targets only.
inline constexpr std::string_view kExplorableKinds[] = {
    "observe",     "recover",        "set_clock_offset", "gc", "bind_temporal_epoch",
    "post_effect", "restart_remote", "restart_store"};

// A restart acts on every instance of the service, or on its store: no node
// performs it.
inline bool performed_by_a_node(std::string_view kind) { return kind != "restart_remote" && kind != "restart_store"; }

// A number of a policy drawn from a range: in the bounds file, the field is
// {"min": A, "max": B} where the scenario's policy has a number
// ("max_clock_error_s": {"min": 0, "max": 30}).
struct PolicyRange {
  nlohmann::json::json_pointer field;  // inside the policy object
  Range range;
};

struct Bounds {
  std::string id;
  std::string description;
  std::int64_t t0_s = 1000000;
  Range ttl_s{1, 120};
  std::size_t max_nodes = 1;
  Range clock_offset_s{0, 0};
  Range step_gap_s{0, 60};
  std::size_t max_steps = 4;  // after the commit and the first POST
  std::vector<std::string> step_kinds;
  // The generated scenarios' "remote" (the instances and whose clock they
  // judge by, as a scenario file's $.remote); null: one instance, told the
  // time in each request.
  nlohmann::json remote = nullptr;
  std::vector<nlohmann::json> policies;  // policy objects, as a scenario's "policy", ranges and all
  // Of every policy, its ranged fields, in document order; flattened in
  // policy order, they are the numbers a draft draws (Draft::policy_values).
  std::vector<std::vector<PolicyRange>> policy_ranges;
  std::vector<Invariant> invariants;
  std::string source;  // the file it was read from
  std::string digest;  // SHA-256 of the parsed document
};

// Reads a bounds file. Throws InputError (JSON path and message) for a
// document that is not one, and std::runtime_error naming the file when it
// cannot be read.
Bounds load_bounds(const std::filesystem::path& path);
Bounds parse_bounds(const nlohmann::json& document, const std::string& source);

}  // namespace skewbench::explore
