#include "compare/compare.hpp"

#include <array>
#include <fstream>
#include <map>

#include "common/errors.hpp"
#include "common/files.hpp"
#include "common/text.hpp"
#include "sweep/sweep_summary.hpp"

namespace skewbench::compare {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

enum class Kind { Run, Sweep };

Kind kind_of(const fs::path& dir) {
  std::error_code ec;
  if (fs::exists(dir / "sweep.json", ec)) return Kind::Sweep;
  if (fs::exists(dir / "summary.json", ec)) return Kind::Run;
  throw CannotCompare(dir.string() + " holds neither a run (summary.json) nor a sweep (sweep.json)");
}

json read_json(const fs::path& path) {
  try {
    return json::parse(read_file(path));
  } catch (const std::exception& e) {
    throw CannotCompare(path.string() + ": " + e.what());
  }
}

using text::cell;

// Collects rows and totals, then prints them as text or Markdown.
class Report {
 public:
  // Shows at most `limit` changed rows (0: all of them); the count is always complete.
  Report(bool markdown, std::size_t limit) : markdown_(markdown), limit_(limit) {}

  void change(const std::string& key, const json& base, const json& candidate) {
    ++changed_;
    // A CONFLICT the base did not have, including in a scenario the base did
    // not run at all, is a safety regression.
    const bool regression = candidate.is_object() && candidate.at("verdict") == "CONFLICT" &&
                            (!base.is_object() || base.at("verdict") != "CONFLICT");
    if (regression) ++regressions_;
    if (limit_ != 0 && rows_.size() >= limit_) return;
    auto side = [](const json& r, const char* field) {
      return r.is_object() ? cell(r[field]) : std::string("(absent)");
    };
    rows_.push_back({key, side(base, "verdict") + " -> " + side(candidate, "verdict"),
                     side(base, "decision") + " -> " + side(candidate, "decision"),
                     side(base, "effect_count") + " -> " + side(candidate, "effect_count"),
                     regression ? "NEW CONFLICT" : ""});
  }

  void count(const json& base, const json& candidate) {
    if (base.is_object()) ++totals_[base.at("policy").get<std::string>()].first[base.at("verdict").get<std::string>()];
    if (candidate.is_object()) {
      ++totals_[candidate.at("policy").get<std::string>()].second[candidate.at("verdict").get<std::string>()];
      if (candidate.at("verdict") == "ERROR") ++candidate_errors_;
    }
  }

  int print(const std::string& what, std::ostream& out) const {
    const std::vector<std::string> head = {what, "verdict", "decision", "effects", ""};
    if (markdown_) {
      out << "### Changed " << what << "s\n\n";
      if (rows_.empty()) {
        out << "No " << what << " changed verdict, decision or effect count.\n\n";
      } else {
        out << "| " << what << " | verdict | decision | effects | |\n|---|---|---|---|---|\n";
        for (const auto& r : rows_)
          out << "| " << r[0] << " | " << r[1] << " | " << r[2] << " | " << r[3] << " | "
              << (r[4].empty() ? "" : "**" + r[4] + "**") << " |\n";
        if (changed_ > rows_.size()) out << "\n(" << changed_ - rows_.size() << " more not shown)\n";
        out << "\n";
      }
      out << "### Totals per policy (base -> candidate)\n\n| policy | SAFE | CONFLICT | HELD | ERROR "
             "|\n|---|---|---|---|---|\n";
      for (const auto& [policy, t] : totals_) {
        out << "| " << policy;
        for (const char* v : {"SAFE", "CONFLICT", "HELD", "ERROR"})
          out << " | " << get(t.first, v) << " -> " << get(t.second, v);
        out << " |\n";
      }
      out << "\n";
    } else {
      out << "changed " << what << "s: " << changed_ << "\n";
      for (const auto& r : rows_) {
        out << "  " << pad(r[0], 40) << pad(r[1], 24) << pad(r[2], 40) << pad(r[3], 10) << r[4] << "\n";
      }
      if (changed_ > rows_.size()) out << "  (" << changed_ - rows_.size() << " more not shown)\n";
      out << "totals per policy (base -> candidate):\n";
      for (const auto& [policy, t] : totals_) {
        out << "  " << pad(policy, 24);
        for (const char* v : {"SAFE", "CONFLICT", "HELD", "ERROR"}) {
          out << v << " " << get(t.first, v) << "->" << get(t.second, v) << "  ";
        }
        out << "\n";
      }
    }
    if (regressions_ > 0) {
      out << (markdown_ ? "**" : "") << "safety regression: " << regressions_ << " " << what
          << "(s) CONFLICT in the candidate but not in the base" << (markdown_ ? "**" : "") << "\n";
      return exit_code::kExpectationFailed;
    }
    if (candidate_errors_ > 0) {
      out << "the candidate has " << candidate_errors_ << " ERROR result(s): it cannot vouch for safety\n";
      return exit_code::kInfrastructure;
    }
    out << "no new CONFLICT\n";
    return exit_code::kPass;
  }

 private:
  static std::string pad(const std::string& s, std::size_t w) {
    return s.size() >= w ? s + " " : s + std::string(w - s.size(), ' ');
  }
  static std::uint64_t get(const std::map<std::string, std::uint64_t>& m, const char* k) {
    const auto it = m.find(k);
    return it == m.end() ? 0 : it->second;
  }

  bool markdown_;
  std::size_t limit_;
  std::vector<std::array<std::string, 5>> rows_;
  std::map<std::string, std::pair<std::map<std::string, std::uint64_t>, std::map<std::string, std::uint64_t>>> totals_;
  std::uint64_t changed_ = 0;
  std::uint64_t regressions_ = 0;
  std::uint64_t candidate_errors_ = 0;
};

bool differs(const json& a, const json& b) {
  if (!a.is_object() || !b.is_object()) return true;
  return a.at("verdict") != b.at("verdict") ||
         a.value("decision", json(nullptr)) != b.value("decision", json(nullptr)) ||
         a.value("effect_count", json(nullptr)) != b.value("effect_count", json(nullptr));
}

int compare_runs(const fs::path& base_dir, const fs::path& cand_dir, Report& report, std::ostream& out) {
  const auto base = read_json(base_dir / "summary.json");
  const auto cand = read_json(cand_dir / "summary.json");
  if (base.value("schema_version", "") != cand.value("schema_version", "")) {
    throw CannotCompare("different schema versions: " + cell(base["schema_version"]) + " and " +
                        cell(cand["schema_version"]));
  }
  std::map<std::string, std::pair<json, json>> rows;
  for (const auto& r : base.at("scenarios")) rows[r.at("id").get<std::string>()].first = r;
  for (const auto& r : cand.at("scenarios")) rows[r.at("id").get<std::string>()].second = r;
  bool common = false;
  for (const auto& [id, pair] : rows) common = common || (pair.first.is_object() && pair.second.is_object());
  if (!common) throw CannotCompare("the two runs have no scenario id in common");
  for (const auto& [id, pair] : rows) {
    report.count(pair.first, pair.second);
    if (differs(pair.first, pair.second)) report.change(id, pair.first, pair.second);
  }
  return report.print("scenario", out);
}

int compare_sweeps(const fs::path& base_dir, const fs::path& cand_dir, Report& report, std::ostream& out,
                   std::ostream& err) {
  const auto base = sweep::read_sweep_summary(base_dir);
  const auto cand = sweep::read_sweep_summary(cand_dir);
  if (base["schema_version"] != cand["schema_version"]) {
    throw CannotCompare("different schema versions: " + cell(base["schema_version"]) + " and " +
                        cell(cand["schema_version"]));
  }
  if (base.at("grid").at("identity_digest") != cand.at("grid").at("identity_digest")) {
    throw CannotCompare("different grids: the policies' labels or the axes (names, values, scope) differ");
  }
  for (const auto* s : {&base, &cand}) {
    if (!s->at("shard").is_null()) throw CannotCompare("one side is a single shard; merge the shards first");
    if (!s->at("complete").get<bool>()) throw CannotCompare("one side is an incomplete sweep");
  }
  if (base["base_scenario_digest"] != cand["base_scenario_digest"]) {
    err << "skewbench: note: the base scenarios differ; cells are matched by policy and axis values\n";
  }
  std::ifstream a(base_dir / "cells.jsonl");
  std::ifstream b(cand_dir / "cells.jsonl");
  std::string la;
  std::string lb;
  while (true) {
    const bool ga = static_cast<bool>(std::getline(a, la));
    const bool gb = static_cast<bool>(std::getline(b, lb));
    if (!ga && !gb) break;
    if (ga != gb) throw CannotCompare("the two cells.jsonl files have different lengths");
    const auto ra = json::parse(la);
    const auto rb = json::parse(lb);
    if (ra.at("cell") != rb.at("cell") || ra.at("parameters") != rb.at("parameters") ||
        ra.at("policy") != rb.at("policy")) {
      throw CannotCompare("cell " + cell(ra["cell"]) + " does not match between the two sweeps");
    }
    report.count(ra, rb);
    if (differs(ra, rb)) report.change(cell(ra["policy"]) + " " + ra["parameters"].dump(), ra, rb);
  }
  return report.print("cell", out);
}

}  // namespace

int compare_dirs(const fs::path& base_dir, const fs::path& candidate_dir, const Options& options, std::ostream& out,
                 std::ostream& err) {
  const auto base_kind = kind_of(base_dir);
  const auto cand_kind = kind_of(candidate_dir);
  if (base_kind != cand_kind) throw CannotCompare("one directory is a run and the other a sweep");
  Report report(options.markdown, options.limit);
  return base_kind == Kind::Run ? compare_runs(base_dir, candidate_dir, report, out)
                                : compare_sweeps(base_dir, candidate_dir, report, out, err);
}

}  // namespace skewbench::compare
