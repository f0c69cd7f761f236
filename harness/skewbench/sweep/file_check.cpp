#include "sweep/file_check.hpp"

#include <map>

#include "common/files.hpp"
#include "common/json_reader.hpp"
#include "published/published.hpp"
#include "scenario/scenario.hpp"
#include "sweep/grid.hpp"

namespace skewbench::sweep {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The document when the file is JSON at all; null otherwise (the scenario
// loader then says what is wrong with it).
json peek(const fs::path& path) {
  try {
    return parse_bounded_json(read_file(path));
  } catch (const std::exception&) {
    return nullptr;
  }
}

FileCheck check_grid(const fs::path& path) {
  FileCheck check{.path = path.string(), .kind = "grid", .summary = "", .errors = {}};
  try {
    const auto grid = Grid::load(path);
    check.summary = "grid " + grid.id() + ", " + std::to_string(grid.cell_count()) + " cells, " +
                    std::to_string(grid.policies().size()) + " policies";
  } catch (const scenario::ScenarioFileError& e) {
    check.errors.push_back(e.what());
  }
  return check;
}

// Scenario ids and report_as sections must be unique across the files checked
// together, as run requires.
class UniqueNames {
 public:
  void add(const scenario::Scenario& s, FileCheck& check) {
    if (const auto [it, inserted] = ids_.emplace(s.id, s.source); !inserted) {
      check.errors.push_back(s.source + ": $.id: scenario id \"" + s.id + "\" is also used by " + it->second);
    }
    if (!s.report_as) return;
    if (const auto [it, inserted] = sections_.emplace(*s.report_as, s.source); !inserted) {
      check.errors.push_back(s.source + ": $.report_as: section \"" + *s.report_as + "\" is also reported by " +
                             it->second);
    }
  }

 private:
  std::map<std::string, std::string> ids_;
  std::map<std::string, std::string> sections_;
};

FileCheck check_scenario(const fs::path& path, UniqueNames& names) {
  FileCheck check{.path = path.string(), .kind = "scenario", .summary = "", .errors = {}};
  try {
    const auto s = scenario::load_scenario_file(path);
    check.summary = "scenario " + s.id;
    names.add(s, check);
    if (const auto problem = published::report_as_problem(s)) {
      check.errors.push_back(scenario::ScenarioFileError(s.source, "$.report_as", *problem).what());
    }
  } catch (const scenario::ScenarioFileError& e) {
    check.errors.push_back(e.what());
  }
  return check;
}

}  // namespace

bool looks_like_grid(const json& document) {
  return document.is_object() && document.contains("base_scenario") && document.contains("axes");
}

std::vector<FileCheck> check_files(const std::vector<std::string>& paths, const OtherFileCheck& other) {
  std::vector<FileCheck> out;
  UniqueNames names;
  for (const auto& p : paths) {
    std::vector<fs::path> files;
    try {
      files = scenario::collect_scenario_files({p});
    } catch (const scenario::ScenarioFileError& e) {
      out.push_back({.path = p, .kind = "", .summary = "", .errors = {e.what()}});
      continue;
    }
    for (const auto& file : files) {
      const auto document = peek(file);
      if (auto check = other ? other(file, document) : std::nullopt) {
        out.push_back(std::move(*check));
        continue;
      }
      out.push_back(looks_like_grid(document) ? check_grid(file) : check_scenario(file, names));
    }
  }
  return out;
}

}  // namespace skewbench::sweep
