#pragma once

// A tiny crafted sweep directory (sweep.json + cells.jsonl) for the report
// tests: two policies, three axes, two maps, two marks, every verdict, text
// that needs escaping, and one cell left out as if the sweep had stopped.

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "common/files.hpp"

namespace skewbench::testing {

struct TinySweep {
  static constexpr const char* kGridId = "tiny <grid> & \"quotes\"";
  static constexpr const char* kAlpha = "alpha";
  static constexpr const char* kBeta = "beta <b>";
  static constexpr const char* kAlphaMark = "#018 <mark> & co";
  // The beta cell left out: offset_s = 0, eps_s = 0, recovery_s = 50.
  static constexpr int kCellsWritten = 23;
};

// A small valid grid over the #018 base scenario: node_local and uncertainty
// (max_clock_error_s 20), node B's offset over `offsets_s`, and uncertainty's
// clock error over {0, 20}. Tests change or remove what they need.
inline nlohmann::json small_grid_document(const nlohmann::json& offsets_s = {0, 10, 20},
                                          const std::string& base_scenario = "scenarios/sweeps/018-base.json") {
  using nlohmann::json;
  return {{"id", "small"},
          {"description", "a small grid for tests"},
          {"base_scenario", base_scenario},
          {"policies", json::array({{{"policy", {{"name", "node_local"}}}},
                                    {{"policy", {{"name", "uncertainty"}, {"max_clock_error_s", 20}}}}})},
          {"axes",
           json::array({{{"name", "node_b_offset_s"}, {"pointer", "/nodes/1/clock_offset_s"}, {"values", offsets_s}},
                        {{"name", "max_clock_error_s"},
                         {"pointer", "/policy/max_clock_error_s"},
                         {"values", {0, 20}},
                         {"policies", {"uncertainty"}}}})}};
}

// beta: SAFE left of 0, HELD at 0, CONFLICT right of 0, one ERROR; alpha:
// SAFE up to 0, CONFLICT at +10.
inline std::string tiny_verdict(const std::string& policy, int offset_s, const nlohmann::json& eps_s, int recovery_s) {
  if (offset_s < 0) return "SAFE";
  if (policy == TinySweep::kAlpha) return offset_s == 0 ? "SAFE" : "CONFLICT";
  if (offset_s == 0) return "HELD";
  return eps_s == 10 && recovery_s == 50 ? "ERROR" : "CONFLICT";
}

inline nlohmann::json tiny_grid() {
  using nlohmann::json;
  return {{"id", TinySweep::kGridId},
          {"policies", json::array({{{"label", TinySweep::kAlpha},
                                     {"policy", {{"name", "node_local"}}},
                                     {"defaults", {{"offset_s", 0}, {"eps_s", nullptr}, {"recovery_s", 50}}}},
                                    {{"label", TinySweep::kBeta},
                                     {"policy", {{"name", "uncertainty"}, {"max_clock_error_s", 5}}},
                                     {"defaults", {{"offset_s", 0}, {"eps_s", 5}, {"recovery_s", 50}}}}})},
          {"axes", json::array({{{"name", "offset_s"},
                                 {"pointer", "/nodes/1/clock_offset_s"},
                                 {"values", {-10, 0, 10}},
                                 {"policies", json::array()}},
                                {{"name", "eps_s"},
                                 {"pointer", "/policy/max_clock_error_s"},
                                 {"values", {0, 5, 10}},
                                 {"policies", {"uncertainty"}}},
                                {{"name", "recovery_s"},
                                 {"pointer", "/steps/2/at_s"},
                                 {"values", {30, 50}},
                                 {"policies", json::array()}}})},
          {"maps", json::array({{{"x", "offset_s"}, {"y", "eps_s"}}, {{"x", "offset_s"}, {"y", "recovery_s"}}})},
          {"marks", json::array({{{"label", TinySweep::kAlphaMark},
                                  {"policy", TinySweep::kAlpha},
                                  {"at", {{"offset_s", 10}, {"recovery_s", 50}}}},
                                 {{"label", "beta point"},
                                  {"policy", TinySweep::kBeta},
                                  {"at", {{"offset_s", 0}, {"eps_s", 5}, {"recovery_s", 50}}}}})},
          {"cells_total", 24},
          {"identity_digest", "feedface"}};
}

// Writes dir/sweep.json and dir/cells.jsonl; returns dir.
inline std::filesystem::path write_tiny_sweep(const std::filesystem::path& dir) {
  using nlohmann::json;
  std::string lines;
  json per_policy = json::object();
  int cell = 0;
  auto add = [&](const std::string& policy, const std::string& name, int offset_s, const json& eps_s, int recovery_s) {
    const int index = cell++;
    if (policy == TinySweep::kBeta && offset_s == 0 && eps_s == 0 && recovery_s == 50) return;
    const auto verdict = tiny_verdict(policy, offset_s, eps_s, recovery_s);
    json& counts = per_policy[policy];
    if (counts.is_null())
      counts = {{"SAFE", 0}, {"CONFLICT", 0}, {"HELD", 0}, {"ERROR", 0}, {"cells", 0}, {"policy_name", name}};
    counts[verdict] = counts[verdict].get<int>() + 1;
    counts["cells"] = counts["cells"].get<int>() + 1;
    lines += json({{"cell", index},
                   {"decision", "REPLAY_SAME_KEY"},
                   {"effect_count", verdict == "CONFLICT" ? 2 : 1},
                   {"error", nullptr},
                   {"policy", policy},
                   {"policy_name", name},
                   {"parameters", {{"offset_s", offset_s}, {"eps_s", eps_s}, {"recovery_s", recovery_s}}},
                   {"verdict", verdict}})
                 .dump() +
             "\n";
  };
  for (const int offset_s : {-10, 0, 10}) {
    for (const int recovery_s : {30, 50}) add(TinySweep::kAlpha, "node_local", offset_s, nullptr, recovery_s);
  }
  for (const int offset_s : {-10, 0, 10}) {
    for (const int eps_s : {0, 5, 10}) {
      for (const int recovery_s : {30, 50}) add(TinySweep::kBeta, "uncertainty", offset_s, eps_s, recovery_s);
    }
  }
  const json summary = {{"schema_version", "test"},
                        {"kind", "sweep_summary"},
                        {"grid_id", TinySweep::kGridId},
                        {"grid", tiny_grid()},
                        {"grid_document",
                         {{"description", "a tiny grid <for> tests"},
                          {"axes", json::array({{{"name", "offset_s"}, {"description", "node B's clock offset"}}})}}},
                        {"shard", nullptr},
                        {"cells_total", 24},
                        {"cells_planned", 24},
                        {"cells_done", TinySweep::kCellsWritten},
                        {"complete", false},
                        {"per_policy", per_policy},
                        {"cells_core_digest", "c0ffee"},
                        {"environment",
                         {{"started_at_utc", "2026-11-30T01:00:00Z"},
                          {"finished_at_utc", "2026-11-30T01:02:00Z"},
                          {"host", "testhost"},
                          {"postgresql", {{"server_version", "17.2 <test>"}}},
                          {"remote_effect", {{"version", "0.1.0"}, {"sqlite_version", "3.40.1"}, {"sync", "full"}}}}},
                        {"warnings", {"a warning with <angle> brackets"}}};
  write_file_atomically(dir / "sweep.json", summary.dump(2));
  write_file_atomically(dir / "cells.jsonl", lines);
  return dir;
}

}  // namespace skewbench::testing
