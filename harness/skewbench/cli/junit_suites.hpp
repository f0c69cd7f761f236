#pragma once

// The JUnit suites of compare, verify and sweep (run's are in
// artifacts/junit.hpp, next to the evidence they read).

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "artifacts/junit.hpp"
#include "artifacts/verify.hpp"
#include "compare/compare.hpp"

namespace skewbench::cli {

// One case per compared scenario or cell that changed, went missing or was
// added: a new CONFLICT and a MISSING row fail, a candidate ERROR is an
// error; plus one case for the core digests. Properties: both digests.
std::vector<artifacts::JunitSuite> compare_suites(const compare::Comparison& comparison);

// One failed case per problem, or one passed case when the folder is whole.
std::vector<artifacts::JunitSuite> verify_suites(const std::string& dir, const artifacts::Verification& result);

// The sweep as sweep.json has it: one case per policy, an error when any of
// its cells ended in ERROR. Properties: the cells core digest and the counts.
std::vector<artifacts::JunitSuite> sweep_suites(const nlohmann::json& summary, const std::string& grid_path);

}  // namespace skewbench::cli
