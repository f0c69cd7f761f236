#include "compare/compare.hpp"

#include <fstream>
#include <set>

#include "common/digest.hpp"
#include "common/files.hpp"
#include "common/json_reader.hpp"
#include "common/text.hpp"
#include "evidence/cell_core.hpp"
#include "evidence/evidence.hpp"
#include "sweep/sweep_summary.hpp"

namespace skewbench::compare {
namespace fs = std::filesystem;
using nlohmann::json;
using scenario::Verdict;

namespace {

// "the base (DIR)", "the candidate (DIR)": every message says which side it means.
std::string named(const char* side, const fs::path& dir) {
  return std::string("the ") + side + " (" + dir.string() + ")";
}

Kind kind_of(const fs::path& dir, const char* side) {
  std::error_code ec;
  if (fs::exists(dir / "sweep.json", ec)) return Kind::Sweep;
  if (fs::exists(dir / "summary.json", ec)) return Kind::Run;
  throw CannotCompare(named(side, dir) + " holds neither a run (summary.json) nor a sweep (sweep.json)");
}

json read_json_file(const fs::path& path) {
  try {
    return parse_bounded_json(read_file(path));
  } catch (const InputFileError& e) {
    throw CannotCompare(e.what());  // it names the path
  } catch (const std::exception& e) {
    throw CannotCompare(path.string() + ": " + e.what());
  }
}

// A row's verdict, checked: a word that is not a verdict is a damaged file.
Verdict verdict_of(const json& row, const std::string& where) {
  const auto word = row.value("verdict", json(nullptr));
  const auto verdict = word.is_string() ? scenario::verdict_from_string(word.get<std::string>()) : std::nullopt;
  if (!verdict) throw CannotCompare(where + ": verdict " + word.dump() + " is not " + scenario::verdict_words());
  return *verdict;
}

json compared_fields(const json& row) {
  json out = json::object();
  for (const char* field : kComparedFields) out[field] = row.value(field, json(nullptr));
  return out;
}

// Counts every pair and keeps the first `limit` rows that differ.
class Collector {
 public:
  Collector(Comparison& comparison, std::size_t limit) : c_(comparison), limit_(limit) {}

  void add(const std::string& key, const json& coordinates, const json* base, const json* candidate) {
    if (base) ++c_.totals[base->at("policy").get<std::string>()].base[index_of(*base)];
    if (candidate) {
      ++c_.totals[candidate->at("policy").get<std::string>()].candidate[index_of(*candidate)];
      if (candidate->at("verdict") == std::string(scenario::to_string(Verdict::Error))) ++c_.candidate_errors;
    }
    Row row{.status = !candidate ? RowStatus::Missing : (!base ? RowStatus::Added : RowStatus::Changed),
            .key = key,
            .coordinates = coordinates,
            .base = base ? compared_fields(*base) : json(nullptr),
            .candidate = candidate ? compared_fields(*candidate) : json(nullptr),
            .changed_fields = {},
            .new_conflict = false};
    if (base && candidate) {
      for (const char* field : kComparedFields) {
        if (row.base[field] != row.candidate[field]) row.changed_fields.emplace_back(field);
      }
      if (row.changed_fields.empty()) return;
    }
    const std::string conflict(scenario::to_string(Verdict::Conflict));
    row.new_conflict = candidate && row.candidate["verdict"] == conflict && (!base || row.base["verdict"] != conflict);
    ++(row.status == RowStatus::Missing ? c_.missing : row.status == RowStatus::Added ? c_.added : c_.changed);
    if (row.new_conflict) ++c_.new_conflicts;
    if (limit_ == 0 || c_.rows.size() < limit_) c_.rows.push_back(std::move(row));
  }

 private:
  static std::size_t index_of(const json& row) {
    return static_cast<std::size_t>(*scenario::verdict_from_string(row.at("verdict").get<std::string>()));
  }

  Comparison& c_;
  std::size_t limit_;
};

// summary.json, its rows checked and its core digest recomputed from them.
json read_run(const fs::path& dir, Side& side, const char* side_name) {
  const auto path = dir / "summary.json";
  auto summary = read_json_file(path);
  if (!summary.is_object() || !summary.contains("scenarios") || !summary["scenarios"].is_array()) {
    throw CannotCompare(path.string() + " is not a run summary: it has no \"scenarios\" array");
  }
  for (const auto& row : summary["scenarios"]) {
    if (!row.is_object() || !row.value("id", json(nullptr)).is_string() || !row.value("policy", json()).is_string()) {
      throw CannotCompare(path.string() + ": a scenario row without a string id and policy: " + row.dump());
    }
    verdict_of(row, path.string() + ": scenario " + row["id"].get<std::string>());
  }
  const auto recorded = summary.value("core_digest", json(nullptr));
  const auto recomputed = evidence::run_core_digest(summary["scenarios"]);
  if (recorded != recomputed) {
    throw CannotCompare(path.string() + " (" + side_name + "): its core_digest " + text::cell(recorded) +
                        " does not match its own rows, which give " + recomputed + "; the file was edited or damaged");
  }
  side = {.dir = dir, .core_digest = recomputed};
  return summary;
}

// An in-process run is never taken for the real stack's: comparing the two
// needs --across-engines, and then says so.
void check_engines(const json& base, const json& cand, const fs::path& base_dir, const fs::path& cand_dir,
                   const Options& options, std::vector<std::string>& notes) {
  infra::Engine base_engine{};
  infra::Engine cand_engine{};
  try {
    base_engine = evidence::recorded_engine(base);
  } catch (const std::runtime_error& e) {
    throw CannotCompare(named("base", base_dir) + ": " + e.what());
  }
  try {
    cand_engine = evidence::recorded_engine(cand);
  } catch (const std::runtime_error& e) {
    throw CannotCompare(named("candidate", cand_dir) + ": " + e.what());
  }
  if (base_engine == cand_engine) return;
  const auto both = named("base", base_dir) + " ran on the " + std::string(to_string(base_engine)) + " engine, " +
                    named("candidate", cand_dir) + " on the " + std::string(to_string(cand_engine)) + " engine";
  if (!options.across_engines) {
    throw CannotCompare(both + "; pass --across-engines to compare them anyway (docs/engines.md)");
  }
  notes.push_back(both + " (--across-engines)");
}

void compare_runs(Comparison& c, const fs::path& base_dir, const fs::path& cand_dir, const Options& options) {
  const auto base = read_run(base_dir, c.base, "base");
  const auto cand = read_run(cand_dir, c.candidate, "candidate");
  if (base.value("schema_version", json()) != cand.value("schema_version", json())) {
    throw CannotCompare("different schema versions: " + text::cell(base.value("schema_version", json())) + " in " +
                        named("base", base_dir) + ", " + text::cell(cand.value("schema_version", json())) + " in " +
                        named("candidate", cand_dir));
  }
  check_engines(base, cand, base_dir, cand_dir, options, c.notes);
  std::map<std::string, std::pair<const json*, const json*>> rows;
  for (const auto& r : base["scenarios"]) rows[r["id"].get<std::string>()].first = &r;
  for (const auto& r : cand["scenarios"]) rows[r["id"].get<std::string>()].second = &r;
  Collector collector(c, options.limit);
  for (const auto& [id, pair] : rows) collector.add(id, {{"scenario", id}}, pair.first, pair.second);
}

// --- sweeps -----------------------------------------------------------------

json read_sweep(const fs::path& dir, const char* side) {
  json summary;
  try {
    summary = sweep::read_sweep_summary(dir);
  } catch (const std::exception& e) {
    throw CannotCompare(std::string(e.what()) + " (the " + side + ")");
  }
  const auto shard = summary.value("shard", json(nullptr));
  if (shard.is_object()) {
    throw CannotCompare(named(side, dir) + " is shard " + text::cell(shard.value("index", json())) + "/" +
                        text::cell(shard.value("count", json())) +
                        " of its sweep; merge the shards first (skewbench merge)");
  }
  if (!summary.value("grid", json()).is_object()) {
    throw CannotCompare((dir / "sweep.json").string() + " (the " + side + ") has no \"grid\" object");
  }
  return summary;
}

std::map<std::string, json> by_field(const json& list, const char* field) {
  std::map<std::string, json> out;
  if (!list.is_array()) return out;
  for (const auto& item : list) out[text::cell(item.value(field, json()))] = item;
  return out;
}

// Which policies and axes differ. An axis that means something else on one side
// (absent, another pointer, another scope) makes the cells incomparable; other
// axis values or other policies only make cells MISSING or ADDED.
void check_grids(const json& base, const json& cand, const fs::path& base_dir, const fs::path& cand_dir,
                 std::vector<std::string>& notes) {
  const auto& bg = base["grid"];
  const auto& cg = cand["grid"];
  if (bg.value("identity_digest", json()) == cg.value("identity_digest", json()) && bg.contains("identity_digest")) {
    return;
  }
  const auto b = named("base", base_dir);
  const auto k = named("candidate", cand_dir);
  const auto base_axes = by_field(bg.value("axes", json()), "name");
  const auto cand_axes = by_field(cg.value("axes", json()), "name");
  for (const auto& [name, axis] : base_axes) {
    if (!cand_axes.contains(name))
      throw CannotCompare("different grids: axis \"" + name + "\" is in " + b + " but not in " + k);
  }
  for (const auto& [name, axis] : cand_axes) {
    const auto it = base_axes.find(name);
    if (it == base_axes.end())
      throw CannotCompare("different grids: axis \"" + name + "\" is in " + k + " but not in " + b);
    for (const char* field : {"pointer", "policies"}) {
      if (it->second.value(field, json()) != axis.value(field, json())) {
        throw CannotCompare("different grids: axis \"" + name + "\" has " + field + " " +
                            it->second.value(field, json()).dump() + " in " + b + " and " +
                            axis.value(field, json()).dump() + " in " + k);
      }
    }
    if (it->second.value("values", json()) != axis.value("values", json())) {
      notes.push_back("axis \"" + name + "\" takes " + it->second.value("values", json()).dump() + " in the base and " +
                      axis.value("values", json()).dump() + " in the candidate; cells are matched by their values");
    }
  }
  const auto base_policies = by_field(bg.value("policies", json()), "label");
  for (const auto& [label, policy] : by_field(cg.value("policies", json()), "label")) {
    const auto it = base_policies.find(label);
    if (it == base_policies.end()) continue;
    const auto& bp = it->second.value("policy", json());
    const auto& cp = policy.value("policy", json());
    if (bp.value("name", json()) != cp.value("name", json())) {
      throw CannotCompare("different grids: policy \"" + label + "\" is " + text::cell(bp.value("name", json())) +
                          " in " + b + " and " + text::cell(cp.value("name", json())) + " in " + k);
    }
    if (bp != cp)
      notes.push_back("policy \"" + label + "\" is " + bp.dump() + " in the base and " + cp.dump() +
                      " in the candidate");
  }
}

// Reads cells.jsonl line by line and recomputes its core digest on the way.
class CellReader {
 public:
  CellReader(const fs::path& dir, const char* side) : path_(dir / "cells.jsonl"), side_(side) {
    try {
      in_ = open_input_file(path_);
    } catch (const std::exception& e) {
      throw CannotCompare(std::string(e.what()) + " (the " + side + ")");
    }
  }

  std::optional<json> next() {
    std::string line;
    if (!std::getline(in_, line)) return std::nullopt;
    ++line_number_;
    const auto where = path_.string() + ":" + std::to_string(line_number_);
    json record;
    try {
      record = parse_bounded_json(line);
    } catch (const std::exception& e) {
      throw CannotCompare(where + ": " + e.what());
    }
    if (!record.is_object() || !record.value("policy", json()).is_string() ||
        !record.value("parameters", json()).is_object()) {
      throw CannotCompare(where + ": a cell record needs a string \"policy\" and an object \"parameters\"");
    }
    verdict_of(record, where);
    digest_.update(evidence::cell_core_line(record));
    digest_.update("\n");
    return record;
  }

  // After the last line: the digest must be the one sweep.json records.
  std::string checked_digest(const json& summary) {
    const auto recomputed = digest_.hex_digest();
    const auto recorded = summary.value("cells_core_digest", json(nullptr));
    if (recorded != recomputed) {
      throw CannotCompare(path_.string() + " (the " + side_ + ") gives core digest " + recomputed +
                          ", but its sweep.json records " + text::cell(recorded) + "; a file was edited or damaged");
    }
    return recomputed;
  }

  std::string where() const { return path_.string() + ":" + std::to_string(line_number_); }

 private:
  fs::path path_;
  const char* side_;
  std::ifstream in_;
  Sha256 digest_;
  std::uint64_t line_number_ = 0;
};

std::string cell_key(const json& record) {
  return record["policy"].get<std::string>() + "\n" + record["parameters"].dump();
}

// The policy label and the axis values that apply to it.
json cell_coordinates(const json& record) {
  json out = {{"policy", record["policy"]}};
  for (const auto& [axis, value] : record["parameters"].items()) {
    if (!value.is_null()) out[axis] = value;
  }
  return out;
}

std::string cell_label(const json& coordinates) {
  std::vector<std::string> parts;
  for (const auto& [axis, value] : coordinates.items()) {
    if (axis != "policy") parts.push_back(axis + "=" + text::cell(value));
  }
  auto label = coordinates["policy"].get<std::string>();
  if (!parts.empty()) label.append(" ").append(text::join(parts, " "));
  return label;
}

void note_incomplete(const json& summary, const char* side, const fs::path& dir, std::vector<std::string>& notes) {
  if (summary.value("complete", true)) return;
  notes.push_back(named(side, dir) + " is incomplete: " + text::cell(summary.value("cells_done", json())) + " of " +
                  text::cell(summary.value("cells_planned", json())) + " cells");
}

void compare_sweeps(Comparison& c, const fs::path& base_dir, const fs::path& cand_dir, const Options& options) {
  const auto base = read_sweep(base_dir, "base");
  const auto cand = read_sweep(cand_dir, "candidate");
  if (base.value("schema_version", json()) != cand.value("schema_version", json())) {
    throw CannotCompare("different schema versions: " + text::cell(base.value("schema_version", json())) + " in " +
                        named("base", base_dir) + ", " + text::cell(cand.value("schema_version", json())) + " in " +
                        named("candidate", cand_dir));
  }
  check_engines(base, cand, base_dir, cand_dir, options, c.notes);
  check_grids(base, cand, base_dir, cand_dir, c.notes);
  if (base.value("base_scenario_digest", json()) != cand.value("base_scenario_digest", json())) {
    c.notes.push_back("the base scenarios differ; cells are matched by policy and axis values");
  }
  note_incomplete(base, "base", base_dir, c.notes);
  note_incomplete(cand, "candidate", cand_dir, c.notes);

  std::map<std::string, json> base_cells;
  CellReader base_reader(base_dir, "base");
  while (auto record = base_reader.next()) {
    const auto key = cell_key(*record);
    if (!base_cells.emplace(key, std::move(*record)).second) {
      throw CannotCompare(base_reader.where() + ": a second record of the same cell");
    }
  }
  c.base = {.dir = base_dir, .core_digest = base_reader.checked_digest(base)};

  Collector collector(c, options.limit);
  std::set<std::string> seen;
  CellReader cand_reader(cand_dir, "candidate");
  while (const auto record = cand_reader.next()) {
    const auto key = cell_key(*record);
    if (!seen.insert(key).second) throw CannotCompare(cand_reader.where() + ": a second record of the same cell");
    const auto coordinates = cell_coordinates(*record);
    const auto it = base_cells.find(key);
    collector.add(cell_label(coordinates), coordinates, it == base_cells.end() ? nullptr : &it->second, &*record);
    if (it != base_cells.end()) base_cells.erase(it);
  }
  c.candidate = {.dir = cand_dir, .core_digest = cand_reader.checked_digest(cand)};
  for (const auto& [key, record] : base_cells) {
    const auto coordinates = cell_coordinates(record);
    collector.add(cell_label(coordinates), coordinates, &record, nullptr);
  }
}

}  // namespace

int Comparison::exit_code() const {
  if (new_conflicts > 0 || missing > 0) return 1;
  if (candidate_errors > 0) return 3;
  return 0;
}

Comparison compare_dirs(const fs::path& base_dir, const fs::path& candidate_dir, const Options& options) {
  const auto base_kind = kind_of(base_dir, "base");
  const auto cand_kind = kind_of(candidate_dir, "candidate");
  if (base_kind != cand_kind) {
    throw CannotCompare(named("base", base_dir) + " is a " + (base_kind == Kind::Run ? "run" : "sweep") + " and " +
                        named("candidate", candidate_dir) + " a " + (cand_kind == Kind::Run ? "run" : "sweep"));
  }
  Comparison c;
  c.kind = base_kind;
  if (base_kind == Kind::Run) {
    compare_runs(c, base_dir, candidate_dir, options);
  } else {
    compare_sweeps(c, base_dir, candidate_dir, options);
  }
  return c;
}

}  // namespace skewbench::compare
