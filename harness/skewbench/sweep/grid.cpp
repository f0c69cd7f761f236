#include "sweep/grid.hpp"

#include <algorithm>
#include <set>

#include "common/digest.hpp"
#include "common/files.hpp"
#include "common/json_reader.hpp"

namespace skewbench::sweep {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr std::uint64_t kMaxCells = 10'000'000;
constexpr std::uint64_t kMaxAxisValues = 100'000;

// The error's own words, without the file and JSON path it starts with.
std::string message_of(const scenario::ScenarioFileError& e) {
  return std::string(e.what()).substr(e.file().size() + 2 + e.json_path().size() + 2);
}

std::vector<json> read_values(ObjectReader& axis) {
  const auto* values = axis.optional("values");
  const auto* range = axis.optional("range");
  if ((values == nullptr) == (range == nullptr)) {
    throw InputError(axis.path(), "give exactly one of \"values\" or \"range\"");
  }
  std::vector<json> out;
  if (values) {
    if (!values->is_array() || values->empty())
      throw InputError(axis.child_path("values"), "expected a non-empty array");
    std::set<std::string> seen;
    for (std::size_t i = 0; i < values->size(); ++i) {
      const auto& v = (*values)[i];
      if (v.is_object() || v.is_array() || v.is_null()) {
        throw InputError(index_path(axis.child_path("values"), i), "expected a number, string or boolean");
      }
      if (!seen.insert(v.dump()).second) throw InputError(index_path(axis.child_path("values"), i), "duplicate value");
      out.push_back(v);
    }
    return out;
  }
  ObjectReader r(*range, axis.child_path("range"));
  const auto from = r.require_int("from");
  const auto to = r.require_int("to");
  const auto step = r.require_int("step");
  r.finish();
  if (step <= 0) throw InputError(r.child_path("step"), "must be > 0");
  if (to < from) throw InputError(r.child_path("to"), "must be >= from");
  // In unsigned arithmetic, which wraps where int64 would overflow: to - from
  // and every from + i * step below lie in [0, to - from], which fits.
  const auto span = static_cast<std::uint64_t>(to) - static_cast<std::uint64_t>(from);
  if (span / static_cast<std::uint64_t>(step) >= kMaxAxisValues) throw InputError(r.path(), "more than 100000 values");
  const auto count = span / static_cast<std::uint64_t>(step) + 1;
  for (std::uint64_t i = 0; i < count; ++i) {
    out.emplace_back(
        static_cast<std::int64_t>(static_cast<std::uint64_t>(from) + i * static_cast<std::uint64_t>(step)));
  }
  return out;
}

// The base must itself be a valid scenario (its errors name its own file).
json read_base_scenario(ObjectReader& root, const fs::path& base_dir) {
  const auto base_path = root.require_string("base_scenario");
  const auto base_file = fs::path(base_path).is_absolute() ? fs::path(base_path) : base_dir / base_path;
  return scenario::load_scenario_file(base_file).document;
}

std::vector<PolicyEntry> read_policies(const json& policies) {
  if (policies.empty()) throw InputError("$.policies", "must list at least one policy");
  std::vector<PolicyEntry> out;
  std::set<std::string> labels;
  for (std::size_t i = 0; i < policies.size(); ++i) {
    ObjectReader entry(policies[i], index_path("$.policies", i));
    PolicyEntry p;
    p.policy = entry.require_object("policy");
    policy::builtin_policies().make(p.policy, entry.child_path("policy"));  // validates
    p.label = entry.optional_string("label").value_or(p.policy["name"].get<std::string>());
    if (!labels.insert(p.label).second) {
      throw InputError(entry.path(), "policy label \"" + p.label + "\" is used twice; give each a distinct \"label\"");
    }
    entry.finish();
    out.push_back(std::move(p));
  }
  return out;
}

void check_pointer(const ObjectReader& a, const std::string& pointer) {
  try {
    json::json_pointer parsed(pointer);
    (void)parsed;
  } catch (const json::exception&) {
    throw InputError(a.child_path("pointer"), "\"" + pointer + "\" is not a JSON Pointer");
  }
  if (pointer == "/id" || pointer.rfind("/expect", 0) == 0) {
    throw InputError(a.child_path("pointer"), "a sweep cannot vary the id or the expectations");
  }
}

// An axis's "policies": names of policies in $.policies.
std::vector<std::string> read_axis_scope(ObjectReader& a, const std::vector<PolicyEntry>& policies) {
  std::vector<std::string> out;
  const auto* scope = a.optional("policies");
  if (!scope) return out;
  if (!scope->is_array() || scope->empty()) throw InputError(a.child_path("policies"), "expected a non-empty array");
  for (std::size_t k = 0; k < scope->size(); ++k) {
    const auto path = index_path(a.child_path("policies"), k);
    auto name = expect_string((*scope)[k], path);
    const auto named = [&name](const PolicyEntry& p) { return p.policy["name"] == name; };
    if (std::none_of(policies.begin(), policies.end(), named)) {
      throw InputError(path, "no policy in $.policies is named \"" + name + "\"");
    }
    out.push_back(std::move(name));
  }
  return out;
}

std::vector<Axis> read_axes(const json& axes, const std::vector<PolicyEntry>& policies) {
  std::vector<Axis> out;
  std::set<std::string> axis_names;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    ObjectReader a(axes[i], index_path("$.axes", i));
    Axis axis;
    axis.name = a.require_string("name");
    if (!axis_names.insert(axis.name).second) throw InputError(a.child_path("name"), "axis name used twice");
    axis.pointer = a.require_string("pointer");
    axis.description = a.optional_string("description").value_or("");
    check_pointer(a, axis.pointer);
    axis.values = read_values(a);
    axis.policies = read_axis_scope(a, policies);
    a.finish();
    out.push_back(std::move(axis));
  }
  return out;
}

bool has_axis(const std::vector<Axis>& axes, const std::string& name) {
  return std::any_of(axes.begin(), axes.end(), [&name](const Axis& a) { return a.name == name; });
}

std::vector<HeatMap> read_maps(const json* maps, const std::vector<Axis>& axes) {
  std::vector<HeatMap> out;
  if (!maps) return out;
  if (!maps->is_array()) throw InputError("$.maps", "expected an array");
  for (std::size_t i = 0; i < maps->size(); ++i) {
    ObjectReader m((*maps)[i], index_path("$.maps", i));
    HeatMap map{m.require_string("x"), m.require_string("y")};
    if (!has_axis(axes, map.x)) throw InputError(m.child_path("x"), "no axis named \"" + map.x + "\"");
    if (!has_axis(axes, map.y)) throw InputError(m.child_path("y"), "no axis named \"" + map.y + "\"");
    m.finish();
    out.push_back(map);
  }
  return out;
}

std::vector<Mark> read_marks(const json* marks, const std::vector<PolicyEntry>& policies,
                             const std::vector<Axis>& axes) {
  std::vector<Mark> out;
  if (!marks) return out;
  if (!marks->is_array()) throw InputError("$.marks", "expected an array");
  for (std::size_t i = 0; i < marks->size(); ++i) {
    ObjectReader m((*marks)[i], index_path("$.marks", i));
    Mark mark{m.require_string("label"), m.require_string("policy"), m.require_object("at")};
    const auto labelled = [&mark](const PolicyEntry& p) { return p.label == mark.policy; };
    if (std::none_of(policies.begin(), policies.end(), labelled)) {
      throw InputError(m.child_path("policy"), "no policy labelled \"" + mark.policy + "\"");
    }
    for (const auto& [name, _] : mark.at.items()) {
      if (!has_axis(axes, name)) throw InputError(m.child_path("at") + "." + name, "no axis with this name");
    }
    m.finish();
    out.push_back(std::move(mark));
  }
  return out;
}

}  // namespace

bool Axis::applies_to(const std::string& policy_name) const {
  if (policies.empty()) return true;
  for (const auto& p : policies) {
    if (p == policy_name) return true;
  }
  return false;
}

Grid Grid::load(const fs::path& path) {
  std::string text;
  try {
    text = read_file(path);
  } catch (const std::exception& e) {
    throw scenario::ScenarioFileError(path.string(), "$", e.what());
  }
  try {
    return parse(parse_json_text(text), path.string(), path.parent_path());
  } catch (const InputError& e) {
    throw scenario::ScenarioFileError(path.string(), e.json_path(), e.message());
  }
}

Grid Grid::parse(const json& doc, const std::string& source, const fs::path& base_dir) {
  Grid g;
  g.source_ = source;
  {
    ObjectReader root(doc, "$");
    root.optional_string("$schema");
    g.id_ = root.require_string("id");
    root.require_string("description");
    g.base_scenario_ = read_base_scenario(root, base_dir);
    g.policies_ = read_policies(root.require_array("policies"));
    g.axes_ = read_axes(root.require_array("axes"), g.policies_);
    g.maps_ = read_maps(root.optional("maps"), g.axes_);
    g.marks_ = read_marks(root.optional("marks"), g.policies_, g.axes_);
    root.finish();
  }
  g.document_ = doc;
  g.count_cells();
  g.check_every_value();
  return g;
}

void Grid::count_cells() {
  for (const auto& p : policies_) {
    first_cell_of_policy_.push_back(total_cells_);
    std::uint64_t n = 1;
    for (const auto& axis : axes_) {
      if (axis.applies_to(p.policy["name"].get<std::string>())) n *= axis.values.size();
      if (n > kMaxCells) throw InputError("$.axes", "the grid has more than 10000000 cells");
    }
    total_cells_ += n;
    if (total_cells_ > kMaxCells) throw InputError("$.axes", "the grid has more than 10000000 cells");
  }
}

// Every value of every axis, with the other axes at their first value, must
// make a valid scenario for every policy it applies to, so a wrong pointer or
// value fails here (exit 2) and not halfway through the sweep.
void Grid::check_every_value() {
  for (std::size_t p = 0; p < policies_.size(); ++p) {
    const auto& name = policies_[p].policy["name"].get_ref<const std::string&>();
    bool checked = false;
    for (std::size_t a = 0; a < axes_.size(); ++a) {
      if (!axes_[a].applies_to(name)) continue;
      for (std::size_t v = 0; v < axes_[a].values.size(); ++v) note_readers(check_value(p, a, v));
      checked = true;
    }
    if (checked) continue;
    // No axis applies: the policy's one cell is the base with this policy.
    try {
      note_readers(scenario::parse_scenario(cell_document(cell(first_cell_of_policy_[p])), "cell"));
    } catch (const scenario::ScenarioFileError& e) {
      throw InputError(index_path("$.policies", p),
                       "this policy makes the base scenario invalid at " + e.json_path() + ": " + message_of(e));
    }
  }
}

// A step's kind is set by the base or by one axis, so the cells checked
// above hold every kind any cell can have.
void Grid::note_readers(const scenario::Scenario& cell) {
  for (const auto& kind : cell.service_wide_reader_kinds()) {
    if (std::find(service_wide_readers_.begin(), service_wide_readers_.end(), kind) == service_wide_readers_.end()) {
      service_wide_readers_.push_back(kind);
    }
  }
}

// Value v of axis a, the other axes at their first value, with policy p.
scenario::Scenario Grid::check_value(std::size_t p, std::size_t a, std::size_t v) const {
  const auto& axis = axes_[a];
  Cell c = cell(first_cell_of_policy_[p]);
  c.parameters[axis.name] = axis.values[v];
  try {
    return scenario::parse_scenario(cell_document(c), "cell");
  } catch (const scenario::ScenarioFileError& e) {
    throw InputError(index_path(index_path("$.axes", a) + ".values", v),
                     "with policy \"" + policies_[p].label + "\" this value makes the base scenario invalid at " +
                         e.json_path() + ": " + message_of(e));
  }
}

Cell Grid::cell(std::uint64_t index) const {
  if (index >= total_cells_) throw std::out_of_range("cell index " + std::to_string(index));
  Cell c;
  c.index = index;
  std::size_t p = 0;
  while (p + 1 < first_cell_of_policy_.size() && first_cell_of_policy_[p + 1] <= index) ++p;
  c.policy_index = p;
  std::uint64_t rest = index - first_cell_of_policy_[p];
  const auto& name = policies_[p].policy["name"].get_ref<const std::string&>();
  c.parameters = json::object();
  for (auto it = axes_.rbegin(); it != axes_.rend(); ++it) {
    if (!it->applies_to(name)) {
      c.parameters[it->name] = nullptr;
      continue;
    }
    const auto n = it->values.size();
    c.parameters[it->name] = it->values[rest % n];
    rest /= n;
  }
  return c;
}

json Grid::cell_document(const Cell& c) const {
  json doc = base_scenario_;
  doc["id"] = "cell-" + std::to_string(c.index);
  doc["policy"] = policies_[c.policy_index].policy;
  doc.erase("report_as");
  doc["expect"] = json::object();
  for (auto& step : doc["steps"]) step.erase("expect");
  for (std::size_t a = 0; a < axes_.size(); ++a) {
    const auto& axis = axes_[a];
    const auto& value = c.parameters[axis.name];
    if (value.is_null()) continue;
    const auto where = [a] { return index_path("$.axes", a) + ".pointer"; };
    const json::json_pointer pointer(axis.pointer);
    if (!doc.contains(pointer.parent_pointer())) {
      throw InputError(where(), "pointer " + axis.pointer + " has no parent in the scenario document");
    }
    try {
      doc[pointer] = value;
    } catch (const json::exception& e) {
      // e.g. a token that is not an index into an array
      throw InputError(where(), "pointer " + axis.pointer + " cannot be set in the scenario document: " + e.what());
    }
  }
  return doc;
}

scenario::Scenario Grid::cell_scenario(const Cell& c) const {
  return scenario::parse_scenario(cell_document(c), source_ + " cell " + std::to_string(c.index));
}

std::string Grid::identity_digest() const {
  json identity = {{"policies", json::array()}, {"axes", json::array()}};
  for (const auto& p : policies_) identity["policies"].push_back({p.label, p.policy["name"]});
  for (const auto& a : axes_) {
    identity["axes"].push_back(
        {{"name", a.name}, {"pointer", a.pointer}, {"values", a.values}, {"policies", a.policies}});
  }
  return json_digest(identity);
}

}  // namespace skewbench::sweep
