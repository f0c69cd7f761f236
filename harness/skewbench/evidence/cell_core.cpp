#include "evidence/cell_core.hpp"

namespace skewbench::evidence {

using nlohmann::json;

std::string cell_core_line(const json& record) {
  json core = record;
  core.erase("duration_us");
  core.erase("error");
  return core.dump();
}

void VerdictTally::add(const json& record) {
  auto& entry = by_label_[record.at("policy").get<std::string>()];
  entry.first = record.at("policy_name").get<std::string>();
  ++entry.second[record.at("verdict").get<std::string>()];
}

json VerdictTally::to_json() const {
  json out = json::object();
  for (const auto& [label, entry] : by_label_) {
    json counts = {{"policy_name", entry.first}};
    std::uint64_t total = 0;
    for (const auto verdict : scenario::kAllVerdicts) {
      const std::string word(to_string(verdict));
      const auto it = entry.second.find(word);
      const auto n = it == entry.second.end() ? 0 : it->second;
      counts[word] = n;
      total += n;
    }
    counts["cells"] = total;
    out[label] = counts;
  }
  return out;
}

std::uint64_t VerdictTally::count(scenario::Verdict verdict) const {
  const std::string word(to_string(verdict));
  std::uint64_t n = 0;
  for (const auto& [_, entry] : by_label_) {
    const auto it = entry.second.find(word);
    if (it != entry.second.end()) n += it->second;
  }
  return n;
}

}  // namespace skewbench::evidence
