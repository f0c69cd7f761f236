#include "sweep/cells.hpp"

#include <stdexcept>

namespace skewbench::sweep {

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
    for (const char* v : kVerdicts) {
      const auto it = entry.second.find(v);
      const auto n = it == entry.second.end() ? 0 : it->second;
      counts[v] = n;
      total += n;
    }
    counts["cells"] = total;
    out[label] = counts;
  }
  return out;
}

std::uint64_t VerdictTally::count(const std::string& verdict) const {
  std::uint64_t n = 0;
  for (const auto& [_, entry] : by_label_) {
    const auto it = entry.second.find(verdict);
    if (it != entry.second.end()) n += it->second;
  }
  return n;
}

CellWriter::CellWriter(const std::string& path) : path_(path), out_(path, std::ios::trunc) {
  if (!out_) throw std::runtime_error("cannot open " + path + " for writing");
}

void CellWriter::write(const json& record) {
  out_ << record.dump() << '\n';
  out_.flush();  // readers may follow the file while the sweep runs
  if (!out_) throw std::runtime_error("cannot write " + path_);
  digest_.update(cell_core_line(record));
  digest_.update("\n");
  tally_.add(record);
  ++written_;
}

std::string CellWriter::finish() {
  out_.close();
  if (!out_) throw std::runtime_error("cannot close " + path_);
  return digest_.hex_digest();
}

}  // namespace skewbench::sweep
