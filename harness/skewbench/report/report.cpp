#include "report/report.hpp"

#include <algorithm>
#include <set>
#include <sstream>

#include "common/files.hpp"
#include "common/text.hpp"
#include "report/map_svg.hpp"
#include "report/markup.hpp"

namespace skewbench::report {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr std::string_view kStyleSheet = R"(
:root { color-scheme: light; }
body { font-family: FONTS; margin: 24px 32px; color: #1b1b1b; background: #ffffff; line-height: 1.45; }
h1 { font-size: 22px; margin: 0 0 6px; }
h1 code { font-size: inherit; }
h2 { font-size: 18px; margin: 28px 0 10px; padding-bottom: 4px; border-bottom: 1px solid #dddddd; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, 'Liberation Mono', monospace; font-size: 12px; overflow-wrap: anywhere; }
.facts { margin: 2px 0; color: #444444; }
.warnings { background: #fff6db; border-left: 4px solid #E69F00; padding: 6px 14px; margin: 16px 0; }
.warnings ul { margin: 4px 0; padding-left: 20px; }
.legend { display: flex; flex-wrap: wrap; gap: 6px 28px; list-style: none; padding: 0; margin: 0; }
.swatch { display: inline-block; width: 14px; height: 14px; border: 1px solid #555555; vertical-align: -2px; margin-right: 6px; }
.notrun { background: repeating-linear-gradient(45deg, #e4e4ec 0 3px, #8a8a9c 3px 5px); }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #dddddd; padding: 4px 12px; text-align: right; }
th:first-child, td:first-child { text-align: left; }
.maps { display: flex; flex-wrap: wrap; gap: 16px; align-items: flex-start; }
figure { margin: 0; border: 1px solid #dddddd; border-radius: 6px; padding: 4px; background: #ffffff; display: inline-flex; flex-direction: column; }
figcaption { font-size: 12px; color: #555555; padding: 2px 10px 4px; width: 0; min-width: calc(100% - 20px); overflow-wrap: anywhere; }
svg { display: block; max-width: 100%; height: auto; }
.policy-json { margin: 0 0 10px; }
.description { margin: 4px 0 10px; max-width: 80ch; }
)";

std::string esc(std::string_view text) { return escape_xml(text); }

std::string count_of(const json& counts, const std::string& key) {
  const auto it = counts.find(key);
  return it != counts.end() && it->is_number() ? it->dump() : "0";
}

std::string style_sheet() {
  std::string css(kStyleSheet);
  css.replace(css.find("FONTS"), 5, kFontStack);
  return css;
}

std::vector<std::string> report_warnings(const SweepInfo& sweep, const Tally& tally) {
  std::vector<std::string> out = sweep.warnings;
  if (!sweep.shard.is_null()) {
    out.push_back("this is shard " + text::cell(sweep.shard.value("index", json()), kNotApplicable) + "/" +
                  text::cell(sweep.shard.value("count", json()), kNotApplicable) +
                  " of the sweep: the other shards' cells are drawn as not run; merge the shards (skewbench merge) "
                  "for the whole picture");
  }
  if (!sweep.complete) {
    out.push_back("incomplete sweep: " + std::to_string(sweep.cells_done) + " of " + std::to_string(sweep.cells_total) +
                  " cells were run; cells without a record are drawn hatched as not run");
  }
  for (const auto& policy : sweep.policies) {
    const auto recorded = sweep.per_policy.value(policy.label, json::object());
    const auto found = tally.contains(policy.label) ? tally.at(policy.label) : std::map<std::string, std::uint64_t>{};
    for (const auto state : kVerdictStates) {
      const std::string verdict(style_of(state).name);
      const auto it = found.find(verdict);
      const std::string streamed = std::to_string(it == found.end() ? 0 : it->second);
      if (streamed != count_of(recorded, verdict)) {
        out.push_back("policy " + policy.label + ": cells.jsonl holds " + streamed + " " + verdict +
                      " cells but sweep.json counts " + count_of(recorded, verdict));
      }
    }
  }
  return out;
}

std::string environment_text(const json& env, const std::string& pointer) {
  const json::json_pointer p(pointer);
  return env.contains(p) ? text::cell(env[p], kNotApplicable) : "unknown";
}

std::string header_html(const SweepInfo& sweep) {
  std::ostringstream out;
  out << "<header>\n<h1>Sweep <code>" << esc(sweep.grid_id) << "</code></h1>\n";
  if (!sweep.description.empty()) out << "<p class=\"description\">" << esc(sweep.description) << "</p>\n";
  out << "<p class=\"facts\">ran " << esc(environment_text(sweep.environment, "/started_at_utc")) << " to "
      << esc(environment_text(sweep.environment, "/finished_at_utc")) << " on "
      << esc(environment_text(sweep.environment, "/host")) << ": PostgreSQL "
      << esc(environment_text(sweep.environment, "/postgresql/server_version")) << ", remote-effect "
      << esc(environment_text(sweep.environment, "/remote_effect/version")) << ", skewbench "
      << esc(environment_text(sweep.environment, "/harness/version")) << "</p>\n";
  out << "<p class=\"facts\">" << sweep.cells_done << " of " << sweep.cells_total << " cells run"
      << (sweep.complete ? " (complete)" : " (incomplete)");
  if (!sweep.shard.is_null()) out << " · shard " << esc(sweep.shard.dump());
  out << "</p>\n<p class=\"facts\">cells core digest <code>" << esc(sweep.cells_core_digest)
      << "</code></p>\n<p class=\"facts\">grid identity digest <code>" << esc(sweep.identity_digest)
      << "</code></p>\n</header>\n";
  return out.str();
}

std::string warnings_html(const std::vector<std::string>& warnings) {
  if (warnings.empty()) return "";
  std::ostringstream out;
  out << "<section class=\"warnings\"><strong>Warnings</strong>\n<ul>\n";
  for (const auto& w : warnings) out << "<li>" << esc(w) << "</li>\n";
  out << "</ul></section>\n";
  return out.str();
}

std::string swatch_html(CellState state) {
  const auto& style = style_of(state);
  if (style.fill.empty()) return "<span class=\"swatch notrun\"></span>";
  return "<span class=\"swatch\" style=\"background:" + std::string(style.fill) + "\"></span>";
}

std::string legend_html() {
  std::ostringstream out;
  out << "<h2>Legend</h2>\n<ul class=\"legend\">\n";
  for (const auto state :
       {CellState::Safe, CellState::Conflict, CellState::Held, CellState::Error, CellState::NotRun}) {
    const auto& style = style_of(state);
    out << "<li>" << swatch_html(state) << "<strong>" << esc(style.name) << "</strong>"
        << (style.letter.empty() ? "" : " (" + std::string(style.letter) + ")") << ": " << esc(style.meaning)
        << "</li>\n";
  }
  out << "<li><svg width=\"14\" height=\"14\" viewBox=\"0 0 14 14\" style=\"display:inline;vertical-align:-2px;"
         "margin-right:6px\"><circle cx=\"7\" cy=\"7\" r=\"5\" fill=\"none\" stroke=\"#000000\" stroke-width=\"2\"/>"
         "</svg>a marked point (the published #018 runs)</li>\n</ul>\n";
  out << "<p class=\"facts\">Each map holds every axis but its two at the policy's default. A map over an axis "
         "a policy does not use is not drawn for that policy; its section says so.</p>\n";
  return out.str();
}

std::string axes_html(const SweepInfo& sweep) {
  std::ostringstream out;
  out << "<h2>Axes</h2>\n<table class=\"axes\">\n<thead><tr><th>axis</th><th>what it means</th><th>values</th>"
         "<th>policies</th></tr></thead>\n<tbody>\n";
  for (const auto& axis : sweep.axes) {
    std::vector<std::string> values;
    for (const auto& v : axis.values) values.push_back(text::cell(v, kNotApplicable));
    out << "<tr><td>" << esc(axis.name) << "</td><td>" << (axis.description.empty() ? "" : esc(axis.description) + "; ")
        << "sets <code>" << esc(axis.pointer) << "</code> in the base scenario</td><td>"
        << esc(text::join(values, ", ")) << "</td><td>"
        << esc(axis.policies.empty() ? std::string("all") : text::join(axis.policies, ", ")) << "</td></tr>\n";
  }
  out << "</tbody>\n</table>\n";
  return out.str();
}

std::string totals_html(const SweepInfo& sweep) {
  std::ostringstream out;
  out << "<h2>Totals per policy</h2>\n<table>\n<thead><tr><th>policy</th>";
  for (const auto state : kVerdictStates) out << "<th>" << swatch_html(state) << esc(style_of(state).name) << "</th>";
  out << "<th>cells</th></tr></thead>\n<tbody>\n";
  for (const auto& policy : sweep.policies) {
    const auto counts = sweep.per_policy.value(policy.label, json::object());
    out << "<tr><td>" << esc(policy.label) << "</td>";
    for (const auto state : kVerdictStates)
      out << "<td>" << count_of(counts, std::string(style_of(state).name)) << "</td>";
    out << "<td>" << count_of(counts, "cells") << "</td></tr>\n";
  }
  out << "</tbody>\n</table>\n";
  return out.str();
}

void flatten(const json& value, const std::string& path, std::vector<std::pair<std::string, std::string>>& rows) {
  if (value.is_object()) {
    for (const auto& [key, child] : value.items()) flatten(child, path.empty() ? key : path + "." + key, rows);
  } else {
    rows.emplace_back(path, text::cell(value, kNotApplicable));
  }
}

// "max_clock_error_s = 20; authority.offset_s = 5", or "no parameters".
std::string policy_parameters_text(const json& policy) {
  std::vector<std::pair<std::string, std::string>> rows;
  json parameters = policy;
  parameters.erase("name");
  flatten(parameters, "", rows);
  std::vector<std::string> parts;
  for (const auto& [key, value] : rows) parts.push_back(key + " = " + value);
  return parts.empty() ? "no parameters" : text::join(parts, "; ");
}

// The axes of maps that are not drawn for this policy, because it ignores them.
std::vector<std::string> ignored_map_axes(const SweepInfo& sweep, const PolicyInfo& policy) {
  std::vector<std::string> out;
  for (const auto& map : sweep.maps) {
    for (const auto* name : {&map.x, &map.y}) {
      if (!sweep.axis(*name).applies_to(policy.name) && std::find(out.begin(), out.end(), *name) == out.end()) {
        out.push_back(*name);
      }
    }
  }
  return out;
}

std::string policy_html(const SweepInfo& sweep, const PolicyInfo& policy, const std::vector<std::string>& svgs,
                        const std::vector<std::string>& files) {
  std::ostringstream out;
  out << "<section>\n<h2>" << esc(policy.label) << "</h2>\n<p class=\"policy-json\">policy <strong>" << esc(policy.name)
      << "</strong>: " << esc(policy_parameters_text(policy.policy)) << "</p>\n";
  const auto ignored = ignored_map_axes(sweep, policy);
  if (!ignored.empty()) {
    out << "<p class=\"facts\">" << esc(policy.name) << " does not use " << esc(text::join(ignored, ", "))
        << ": the maps over " << (ignored.size() == 1 ? "it" : "them") << " are not drawn for this policy.</p>\n";
  }
  out << "<div class=\"maps\">\n";
  for (std::size_t k = 0; k < svgs.size(); ++k) {
    out << "<figure>\n"
        << svgs[k] << "<figcaption>standalone: <a href=\"maps/" << esc(files[k]) << "\">maps/" << esc(files[k])
        << "</a></figcaption>\n</figure>\n";
  }
  if (sweep.maps.empty()) out << "<p>The grid names no maps.</p>\n";
  out << "</div>\n</section>\n";
  return out.str();
}

std::string environment_html(const json& env) {
  std::ostringstream out;
  out << "<h2>Environment</h2>\n<p class=\"facts\">PostgreSQL "
      << esc(environment_text(env, "/postgresql/server_version")) << " · remote-effect "
      << esc(environment_text(env, "/remote_effect/version")) << " (SQLite "
      << esc(environment_text(env, "/remote_effect/sqlite_version"))
      << ", synchronous=" << esc(environment_text(env, "/remote_effect/sync")) << ") · skewbench "
      << esc(environment_text(env, "/harness/version")) << " (" << esc(environment_text(env, "/harness/git_commit"))
      << ", " << esc(environment_text(env, "/harness/build_type")) << ")</p>\n";
  std::vector<std::pair<std::string, std::string>> rows;
  flatten(env, "", rows);
  out << "<details><summary>everything sweep.json records about the environment</summary>\n<table>\n";
  for (const auto& [key, value] : rows)
    out << "<tr><td>" << esc(key) << "</td><td><code>" << esc(value) << "</code></td></tr>\n";
  out << "</table>\n</details>\n";
  return out.str();
}

struct RenderedMaps {
  std::vector<std::string> svgs;
  std::vector<std::string> files;
};

RenderedMaps render_maps(const std::vector<Slice>& slices) {
  RenderedMaps maps;
  std::set<std::string> taken;
  for (std::size_t k = 0; k < slices.size(); ++k) {
    const auto& x = slices[k].x().name();
    const auto& y = slices[k].y().name();
    std::string name = map_file_name(slices[k].policy_label(), x, y);
    for (int n = 2; !taken.insert(name).second; ++n) {
      name = map_file_name(slices[k].policy_label() + "-" + std::to_string(n), x, y);
    }
    maps.files.push_back(name);
    maps.svgs.push_back(render_map_svg(slices[k], "map" + std::to_string(k)));
  }
  return maps;
}

std::string page_html(const SweepInfo& sweep, const Tally& tally, const std::vector<Slice>& slices,
                      const RenderedMaps& maps) {
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>skewbench sweep "
      << esc(sweep.grid_id) << "</title>\n<style>" << style_sheet() << "</style>\n</head>\n<body>\n";
  out << header_html(sweep) << warnings_html(report_warnings(sweep, tally)) << legend_html() << axes_html(sweep)
      << totals_html(sweep);
  for (const auto& policy : sweep.policies) {
    std::vector<std::string> svgs;
    std::vector<std::string> files;
    for (std::size_t k = 0; k < slices.size(); ++k) {
      if (slices[k].policy_label() != policy.label) continue;
      svgs.push_back(maps.svgs[k]);
      files.push_back(maps.files[k]);
    }
    out << policy_html(sweep, policy, svgs, files);
  }
  out << environment_html(sweep.environment)
      << "<footer><p class=\"facts\">Written by skewbench report from sweep.json and cells.jsonl.</p></footer>\n"
      << "</body>\n</html>\n";
  return out.str();
}

void require_sweep_dir(const fs::path& dir) {
  std::error_code ec;
  for (const char* name : {"sweep.json", "cells.jsonl"}) {
    if (!fs::exists(fs::symlink_status(dir / name, ec))) {
      throw ReportInputError(dir.string() + " is not a sweep directory: " + (dir / name).string() + " is missing");
    }
    if (const auto problem = input_file_problem(dir / name))
      throw ReportInputError((dir / name).string() + " " + *problem);
  }
}

// Every file the report will write may be written: checked before the first
// one is, so a refusal leaves nothing behind.
void require_writable(const fs::path& out_dir, const std::vector<std::string>& relative_paths, bool overwrite) {
  for (const auto& relative : relative_paths) {
    if (const auto problem = output_path_problem(out_dir, relative)) throw ReportInputError("cannot write " + *problem);
    std::error_code ec;
    if (!overwrite && fs::exists(out_dir / relative, ec)) {
      throw ReportInputError((out_dir / relative).string() +
                             " already exists (an earlier report); pass --overwrite to replace it");
    }
  }
}

}  // namespace

std::string map_file_name(const std::string& policy_label, const std::string& x_axis, const std::string& y_axis) {
  std::string name = policy_label + "__" + x_axis + "__by__" + y_axis;
  for (auto& c : name) {
    const bool safe =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!safe) c = '_';
  }
  return name + ".svg";
}

ReportFiles write_report(const fs::path& sweep_dir, const fs::path& out_dir, bool overwrite) {
  require_sweep_dir(sweep_dir);
  const auto sweep = read_sweep_info(sweep_dir / "sweep.json");
  auto slices = make_slices(sweep);
  const auto tally = stream_cells(sweep_dir / "cells.jsonl", sweep, slices);
  const auto maps = render_maps(slices);
  std::vector<std::string> outputs = {"report.html"};
  for (const auto& name : maps.files) outputs.push_back("maps/" + name);
  require_writable(out_dir, outputs, overwrite);
  ReportFiles files;
  for (std::size_t k = 0; k < slices.size(); ++k) {
    files.maps.push_back(out_dir / "maps" / maps.files[k]);
    write_file_atomically(files.maps.back(), maps.svgs[k]);
  }
  files.html = out_dir / "report.html";
  write_file_atomically(files.html, page_html(sweep, tally, slices, maps));
  return files;
}

}  // namespace skewbench::report
