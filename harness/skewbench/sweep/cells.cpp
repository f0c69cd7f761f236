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

PreviousCells::PreviousCells(const std::string& path, std::uint64_t cells_total)
    : path_(path), kept_(cells_total, false) {
  std::ifstream scan(path);
  if (!scan) throw std::runtime_error("cannot read " + path);
  std::string line;
  for (std::uint64_t number = 1; std::getline(scan, line); ++number) {
    json record;
    try {
      record = json::parse(line);
      const auto cell = record.at("cell").get<std::uint64_t>();
      if (cell >= cells_total) throw std::runtime_error("cell " + std::to_string(cell) + " is not in the grid");
      if (record.at("verdict").get<std::string>() != "ERROR" && !kept_[cell]) {
        kept_[cell] = true;
        ++kept_count_;
      }
    } catch (const std::exception& e) {
      throw std::runtime_error(path + ":" + std::to_string(number) + ": " + e.what());
    }
  }
  in_.open(path);
}

json PreviousCells::take(std::uint64_t cell) {
  std::string line;
  while (std::getline(in_, line)) {
    auto record = json::parse(line);
    if (record.at("cell").get<std::uint64_t>() == cell && record.at("verdict") != "ERROR") return record;
  }
  throw std::runtime_error(path_ + " changed while the sweep resumed: cell " + std::to_string(cell) + " is gone");
}

}  // namespace skewbench::sweep
