#include "report/sweep_info.hpp"

#include <algorithm>

#include "common/files.hpp"
#include "common/json_reader.hpp"

namespace skewbench::report {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::vector<std::string> read_strings(const json& array, const std::string& path) {
  if (!array.is_array()) throw InputError(path, "expected an array, got " + std::string(json_type_name(array)));
  std::vector<std::string> out;
  for (std::size_t i = 0; i < array.size(); ++i) out.push_back(expect_string(array[i], index_path(path, i)));
  return out;
}

PolicyInfo read_policy(const json& value, const std::string& path) {
  ObjectReader r(value, path);
  PolicyInfo p;
  p.label = r.require_string("label");
  p.policy = r.require_object("policy");
  p.name = ObjectReader(p.policy, r.child_path("policy")).require_string("name");
  p.defaults = r.require_object("defaults");
  return p;
}

AxisInfo read_axis(const json& value, const std::string& path) {
  ObjectReader r(value, path);
  AxisInfo a;
  a.name = r.require_string("name");
  a.pointer = r.optional_string("pointer").value_or("");
  const auto& values = r.require_array("values");
  if (values.empty()) throw InputError(r.child_path("values"), "expected at least one value");
  a.values.assign(values.begin(), values.end());
  a.policies = read_strings(r.require("policies"), r.child_path("policies"));
  return a;
}

void read_grid(const json& value, SweepInfo& info) {
  ObjectReader grid(value, "$.grid");
  info.grid_id = grid.require_string("id");
  info.identity_digest = grid.optional_string("identity_digest").value_or("");
  const auto& policies = grid.require_array("policies");
  for (std::size_t i = 0; i < policies.size(); ++i) {
    info.policies.push_back(read_policy(policies[i], index_path("$.grid.policies", i)));
  }
  const auto& axes = grid.require_array("axes");
  for (std::size_t i = 0; i < axes.size(); ++i) info.axes.push_back(read_axis(axes[i], index_path("$.grid.axes", i)));
  const auto& maps = grid.require_array("maps");
  for (std::size_t i = 0; i < maps.size(); ++i) {
    ObjectReader m(maps[i], index_path("$.grid.maps", i));
    info.maps.push_back({m.require_string("x"), m.require_string("y")});
    for (const auto* name : {&info.maps.back().x, &info.maps.back().y}) {
      const bool known =
          std::any_of(info.axes.begin(), info.axes.end(), [&](const auto& a) { return a.name == *name; });
      if (!known) throw InputError(m.path(), "no axis named \"" + *name + "\"");
    }
  }
  const auto& marks = grid.require_array("marks");
  for (std::size_t i = 0; i < marks.size(); ++i) {
    ObjectReader m(marks[i], index_path("$.grid.marks", i));
    info.marks.push_back({m.require_string("label"), m.require_string("policy"), m.require_object("at")});
  }
}

// The grid file's own words: its description and each axis's, when given.
void read_descriptions(const json* grid_document, SweepInfo& info) {
  if (!grid_document || !grid_document->is_object()) return;
  const auto description = grid_document->value("description", json());
  if (description.is_string()) info.description = description.get<std::string>();
  const auto axes = grid_document->value("axes", json::array());
  if (!axes.is_array()) return;
  for (const auto& axis : axes) {
    if (!axis.is_object() || !axis.value("description", json()).is_string()) continue;
    for (auto& known : info.axes) {
      if (axis.value("name", json()) == known.name) {
        known.description = axis["description"].get<std::string>();
      }
    }
  }
}

SweepInfo parse_sweep_info(const json& doc) {
  ObjectReader root(doc, "$");
  if (root.optional_string("kind") != "sweep_summary") {
    throw InputError("$.kind", "expected \"sweep_summary\": this is not a skewbench sweep summary");
  }
  SweepInfo info;
  read_grid(root.require_object("grid"), info);
  info.cells_total = static_cast<std::uint64_t>(root.require_int("cells_total"));
  info.cells_done = static_cast<std::uint64_t>(root.require_int("cells_done"));
  info.complete = root.require_bool("complete");
  const auto* shard = root.optional("shard");
  info.shard = shard ? *shard : json(nullptr);
  const auto* digest = root.optional("cells_core_digest");
  info.cells_core_digest = digest && digest->is_string() ? digest->get<std::string>() : "";
  info.per_policy = root.require_object("per_policy");
  const auto* environment = root.optional("environment");
  info.environment = environment && environment->is_object() ? *environment : json::object();
  const auto* warnings = root.optional("warnings");
  if (warnings) info.warnings = read_strings(*warnings, "$.warnings");
  read_descriptions(root.optional("grid_document"), info);
  return info;
}

}  // namespace

const AxisInfo& SweepInfo::axis(const std::string& name) const {
  for (const auto& a : axes) {
    if (a.name == name) return a;
  }
  throw std::logic_error("no axis named " + name);
}

SweepInfo read_sweep_info(const fs::path& sweep_json) {
  try {
    return parse_sweep_info(parse_json_text(read_file(sweep_json)));
  } catch (const InputError& e) {
    throw ReportInputError(sweep_json.string() + ": " + e.what());
  } catch (const std::runtime_error& e) {
    throw ReportInputError(e.what());  // read_file names the path
  }
}

}  // namespace skewbench::report
