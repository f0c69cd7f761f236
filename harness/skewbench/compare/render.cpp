// compare's three renderings of one Comparison: text for a terminal, Markdown
// for a pull request, JSON for a machine.

#include <sstream>

#include "common/text.hpp"
#include "compare/compare.hpp"

namespace skewbench::compare {
namespace {

using nlohmann::json;
using text::plural;

// "verdict SAFE -> CONFLICT, effect_count 1 -> 2"; for a row on one side only,
// that side's verdict.
std::string what_changed(const Row& row) {
  if (row.status == RowStatus::Missing)
    return "verdict " + text::cell(row.base["verdict"]) + " in the base, absent from the candidate";
  if (row.status == RowStatus::Added)
    return "verdict " + text::cell(row.candidate["verdict"]) + " in the candidate, absent from the base";
  std::vector<std::string> parts;
  for (const auto& field : row.changed_fields) {
    parts.push_back(field + " " + text::cell(row.base[field]) + " -> " + text::cell(row.candidate[field]));
  }
  return text::join(parts, ", ");
}

// The closing lines: why the exit code is what it is.
std::vector<std::string> outcome_lines(const Comparison& c) {
  std::vector<std::string> out;
  if (c.new_conflicts > 0) {
    out.push_back("safety regression: " + plural(c.new_conflicts, c.unit()) +
                  " CONFLICT in the candidate but not in the base");
  }
  if (c.missing > 0) {
    out.push_back("missing: " + plural(c.missing, c.unit()) + " of the base not in the candidate");
  }
  if (out.empty() && c.candidate_errors > 0) {
    out.push_back("the candidate has " + plural(c.candidate_errors, "ERROR result") + ": it cannot vouch for safety");
  }
  if (out.empty()) out.push_back("no new CONFLICT, nothing missing");
  return out;
}

std::string digests_line(const Comparison& c) {
  if (c.core_digests_equal()) return "core digests: equal (" + c.base.core_digest + ")";
  return "core digests: differ (base " + c.base.core_digest + ", candidate " + c.candidate.core_digest + ")";
}

std::string counts_line(const Comparison& c) {
  return std::string("changed ") + c.unit() + "s: " + std::to_string(c.changed) +
         ", missing: " + std::to_string(c.missing) + ", added: " + std::to_string(c.added);
}

std::uint64_t not_shown(const Comparison& c) { return c.rows_total() - c.rows.size(); }

}  // namespace

std::string to_text(const Comparison& c) {
  std::ostringstream out;
  out << "base:      " << c.base.dir.string() << "\ncandidate: " << c.candidate.dir.string() << "\n";
  out << digests_line(c) << "\n";
  for (const auto& note : c.notes) out << "note: " << note << "\n";
  out << counts_line(c) << "\n";
  for (const auto& row : c.rows) {
    out << "  " << text::pad(std::string(to_string(row.status)), 8) << " " << text::pad(row.key, 40) << " "
        << what_changed(row) << (row.new_conflict ? "  NEW CONFLICT" : "") << "\n";
  }
  if (not_shown(c) > 0) out << "  (" << not_shown(c) << " more not shown; --limit 0 shows all)\n";
  out << "totals per policy (base -> candidate):\n";
  for (const auto& [policy, counts] : c.totals) {
    out << "  " << text::pad(policy, 24);
    for (std::size_t i = 0; i < scenario::kAllVerdicts.size(); ++i) {
      out << " " << scenario::to_string(scenario::kAllVerdicts[i]) << " " << counts.base[i] << "->"
          << counts.candidate[i];
    }
    out << "\n";
  }
  for (const auto& line : outcome_lines(c)) out << line << "\n";
  return out.str();
}

std::string to_markdown(const Comparison& c) {
  using text::markdown_escape;
  std::ostringstream out;
  out << "### Compare `" << markdown_escape(c.base.dir.string()) << "` -> `"
      << markdown_escape(c.candidate.dir.string()) << "`\n\n"
      << markdown_escape(digests_line(c)) << "\n\n";
  for (const auto& note : c.notes) out << "- note: " << markdown_escape(note) << "\n";
  if (!c.notes.empty()) out << "\n";
  out << markdown_escape(counts_line(c)) << "\n\n";
  if (!c.rows.empty()) {
    out << "| | " << c.unit() << " | what changed | |\n|---|---|---|---|\n";
    for (const auto& row : c.rows) {
      out << "| " << to_string(row.status) << " | " << markdown_escape(row.key) << " | "
          << markdown_escape(what_changed(row)) << " | " << (row.new_conflict ? "**NEW CONFLICT**" : "") << " |\n";
    }
    if (not_shown(c) > 0) out << "\n(" << not_shown(c) << " more not shown)\n";
    out << "\n";
  }
  out << "| policy |";
  for (const auto verdict : scenario::kAllVerdicts) out << " " << to_string(verdict) << " |";
  out << "\n|---|";
  for (std::size_t i = 0; i < scenario::kAllVerdicts.size(); ++i) out << "---|";
  out << "\n";
  for (const auto& [policy, counts] : c.totals) {
    out << "| " << markdown_escape(policy);
    for (std::size_t i = 0; i < scenario::kAllVerdicts.size(); ++i)
      out << " | " << counts.base[i] << " -> " << counts.candidate[i];
    out << " |\n";
  }
  out << "\n";
  for (const auto& line : outcome_lines(c)) out << "**" << markdown_escape(line) << "**\n";
  return out.str();
}

json to_json(const Comparison& c) {
  json rows = json::array();
  for (const auto& row : c.rows) {
    rows.push_back({{"status", std::string(to_string(row.status))},
                    {"key", row.key},
                    {"coordinates", row.coordinates},
                    {"base", row.base},
                    {"candidate", row.candidate},
                    {"changed_fields", row.changed_fields},
                    {"new_conflict", row.new_conflict}});
  }
  json totals = json::object();
  for (const auto& [policy, counts] : c.totals) {
    for (std::size_t i = 0; i < scenario::kAllVerdicts.size(); ++i) {
      const std::string verdict(scenario::to_string(scenario::kAllVerdicts[i]));
      totals[policy]["base"][verdict] = counts.base[i];
      totals[policy]["candidate"][verdict] = counts.candidate[i];
    }
  }
  return {{"kind", c.kind == Kind::Run ? "runs" : "sweeps"},
          {"base", {{"dir", c.base.dir.string()}, {"core_digest", c.base.core_digest}}},
          {"candidate", {{"dir", c.candidate.dir.string()}, {"core_digest", c.candidate.core_digest}}},
          {"core_digests_equal", c.core_digests_equal()},
          {"notes", c.notes},
          {"counts",
           {{"changed", c.changed},
            {"missing", c.missing},
            {"added", c.added},
            {"new_conflicts", c.new_conflicts},
            {"candidate_errors", c.candidate_errors}}},
          {"rows", rows},
          {"rows_not_shown", not_shown(c)},
          {"totals", totals},
          {"outcome", outcome_lines(c)},
          {"exit_code", c.exit_code()}};
}

}  // namespace skewbench::compare
