#include "evidence/console.hpp"

#include <sstream>

#include "common/text.hpp"

namespace skewbench::evidence {

using nlohmann::json;
using text::cell;
using text::pad;

std::string results_table(const std::vector<runner::ScenarioResult>& results) {
  const std::vector<std::pair<std::string, std::size_t>> columns = {{"scenario", 34}, {"policy", 19}, {"temporal", 13},
                                                                    {"decision", 16}, {"POSTs", 6},   {"effects", 8},
                                                                    {"status", 10},   {"verdict", 9}, {"pass", 4}};
  std::ostringstream out;
  for (const auto& [name, width] : columns) out << pad(name, width) << " ";
  out << "\n";
  for (const auto& r : results) {
    const json f = r.final_measurement.is_object() ? r.final_measurement : json::object();
    const std::vector<std::string> values = {r.scenario_id,
                                             r.policy,
                                             cell(r.temporal_state()),
                                             cell(r.decision()),
                                             cell(f.value("post_requests", json(nullptr))),
                                             cell(f.value("effect_count", json(nullptr))),
                                             cell(f.value("status", json(nullptr))),
                                             r.verdict,
                                             r.pass ? "yes" : "NO"};
    for (std::size_t i = 0; i < values.size(); ++i) out << pad(values[i], columns[i].second) << " ";
    out << "\n";
  }
  return out.str();
}

}  // namespace skewbench::evidence
