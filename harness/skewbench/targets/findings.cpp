#include "targets/findings.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "common/text.hpp"

namespace skewbench::targets {
using nlohmann::json;

namespace {

constexpr const char* kDash = "–";
const std::vector<std::string> kColumns = {"target",  "scenario",          "verdict", "POSTs",
                                           "effects", "expiry decided by", "why"};

std::optional<std::int64_t> integer_at(const json& object, const char* key) {
  if (!object.is_object()) return std::nullopt;
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<std::int64_t>();
}

// A POST /effects of the timeline, with the step that sent it.
struct SentPost {
  const json* step = nullptr;
  const json* exchange = nullptr;
};

// The member `key` of `object` by reference, or an empty array.
const json& array_at(const json& object, const char* key) {
  static const json empty = json::array();
  if (!object.is_object()) return empty;
  const auto it = object.find(key);
  return it != object.end() && it->is_array() ? *it : empty;
}

// The scenario's POSTs: the exchanges with a transport outcome, which only a
// POST of the effect has (POST /effects, or a service's own route).
std::vector<SentPost> posts_of(const json& evidence) {
  std::vector<SentPost> out;
  for (const auto& step : array_at(evidence, "timeline")) {
    for (const auto& exchange : array_at(step, "exchanges")) {
      if (exchange.value("transport_outcome", json()).is_string()) out.push_back({&step, &exchange});
    }
  }
  return out;
}

// How the service delivered a POST: the protocol's "delivery", or for a
// service of its own wire the class its target's rules gave the answer.
json delivery_of(const json& exchange) {
  const auto& response = exchange.value("response", json());
  if (response.is_object() && response.contains("delivery")) return response["delivery"];
  const auto answer_class = exchange.value("harness", json::object()).value("answer_class", json());
  if (answer_class == "applied") return "applied";
  if (answer_class == "replayed") return "deduplicated";
  return nullptr;
}

// The time an exchange was judged at: the process clock skewbench set for it,
// else the time it carried in X-Logical-Time (logical mode).
std::optional<std::int64_t> time_of(const json& exchange) {
  if (const auto set = integer_at(exchange.value("harness", json::object()), "process_clock_s")) return set;
  const auto& headers = exchange.value("request", json::object()).value("headers", json::object());
  if (const auto it = headers.find("X-Logical-Time"); it != headers.end() && it->is_string()) {
    try {
      return std::stoll(it->get<std::string>());
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

// The store's clock after a step, as its process_clocks recorded it.
std::optional<std::int64_t> store_clock_of(const json& step) {
  for (const auto& clock : array_at(step, "process_clocks")) {
    if (clock.value("follows", "") == "store") return integer_at(clock, "set_s");
  }
  return std::nullopt;
}

// Whose clock let the replay through, from the clocks at the replay (see the header).
void decide(FindingRow& row, const json& evidence) {
  row.decided_by = kNotApplicable;
  const auto posts = posts_of(evidence);
  if (posts.size() < 2) return;
  // A replay answers a lost acknowledgement. A scenario that lost none (two
  // requests in flight together) names no clock and is no control of record
  // sharing; its duplicate is still named.
  const bool lost_answer = integer_at(evidence.value("final", json::object()), "ack_drops").value_or(0) > 0;
  const auto& first = *posts.front().exchange;
  // The replay is the last POST, or the last one applied when a later one
  // was not (POSTs at once are collected in the order they were sent, not
  // answered): the duplicate is the one the service performed.
  const auto last_applied = std::find_if(posts.rbegin(), posts.rend() - 1,
                                         [](const SentPost& post) { return delivery_of(*post.exchange) == "applied"; });
  const auto& replay = last_applied != posts.rend() - 1 ? *last_applied : posts.back();
  const auto first_s = time_of(first);
  const auto ttl_s = integer_at(evidence.value("input", json::object()), "ttl_s");
  const auto instance_s = time_of(*replay.exchange);
  if (!first_s || !ttl_s || !instance_s) return;
  const auto expires_at_s = *first_s + *ttl_s;
  const auto store_s = store_clock_of(*replay.step);
  // A store that expires keys by a TTL counts it on its own clock, from the
  // time it held when the key was written.
  const auto store_first_s = store_clock_of(*posts.front().step);
  const auto store_expires_at_s = store_first_s ? *store_first_s + *ttl_s : expires_at_s;
  const bool instance_past = lost_answer && *instance_s >= expires_at_s;
  const bool store_past = lost_answer && store_s && *store_s >= store_expires_at_s;
  const auto instance_of = [](const json& exchange) {
    return exchange.value("harness", json::object()).value("instance", json());
  };
  row.across_instances = lost_answer && instance_of(first) != instance_of(*replay.exchange);
  row.clock_past_expiry = instance_past || store_past;
  const auto delivery = delivery_of(*replay.exchange);
  if (delivery == "applied") {
    if (instance_past || store_past) {
      row.decided_by = instance_past && store_past ? "instance or store" : instance_past ? "instance" : "store";
    }
    // The duplicate is the service's own count; the answer only says where.
    if (row.effect_count.value_or(0) < 2) return;
    row.duplicate = {{"step", replay.step->value("index", -1)},
                     {"kind", replay.step->value("kind", "")},
                     {"node", replay.step->value("node", json())},
                     {"instance", replay.exchange->value("harness", json::object()).value("instance", json())},
                     {"instance_clock_s", *instance_s},
                     {"store_clock_s", store_s ? json(*store_s) : json(nullptr)},
                     {"key_expires_at_s", expires_at_s}};
  } else if (delivery == "deduplicated" && (instance_past || store_past)) {
    row.decided_by = "none";
  }
}

std::string cell(const std::optional<std::int64_t>& value) { return value ? std::to_string(*value) : kDash; }

// Whether a count the run measured is the one a table's cell holds: the same
// number, or one within a range "A–B" (a count the requests' timing decides,
// such as how many of eight POSTs at once were refused rather than replayed).
bool count_matches(const std::string& expected, const std::optional<std::int64_t>& measured) {
  if (expected == cell(measured)) return true;
  const auto dash = expected.find(kDash);
  if (!measured || dash == std::string::npos || dash == 0) return false;
  const auto number = [](std::string_view digits) -> std::optional<std::int64_t> {
    if (digits.empty() || digits.size() > 18 ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return std::nullopt;
    }
    return std::stoll(std::string(digits));
  };
  const auto low = number(std::string_view(expected).substr(0, dash));
  const auto high = number(std::string_view(expected).substr(dash + std::string_view(kDash).size()));
  return low && high && *low <= *measured && *measured <= *high;
}

// Whether the run's verdict is the table's: the same, or one of the verdicts
// a cell "CONFLICT or SAFE" names (a race the requests' timing decides).
bool verdict_matches(const std::string& expected, const std::string& measured) {
  if (expected == measured) return true;
  constexpr std::string_view kOr = " or ";
  std::string_view rest = expected;
  while (!rest.empty()) {
    const auto at = rest.find(kOr);
    if (rest.substr(0, at) == measured) return true;
    if (at == std::string_view::npos) break;
    rest.remove_prefix(at + kOr.size());
  }
  return false;
}

// Whether a measured row is the row of the table.
bool row_matches(const FindingRow& r, const ExpectedRow& e) {
  return verdict_matches(e.verdict, r.verdict) && count_matches(e.post_requests, r.post_requests) &&
         count_matches(e.effect_count, r.effect_count) && r.decided_by == e.decided_by;
}

// The cells of a table row as Markdown reads them: "\|" is a pipe inside a
// cell, not a border, and a backslash before any other ASCII punctuation is
// an escape (markdown_escape writes them), so a cell reads back as the text
// that was written.
std::vector<std::string> split_row(const std::string& line) {
  std::vector<std::string> cells;
  std::string current;
  for (std::size_t i = 1; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '\\' && i + 1 < line.size() && std::ispunct(static_cast<unsigned char>(line[i + 1])) != 0) {
      current += line[++i];
    } else if (c == '|') {
      cells.emplace_back(text::trim(current));
      current.clear();
    } else {
      current += c;
    }
  }
  return cells;
}

// Two rows of the table for one target and scenario that say different
// things: the table cannot be held against a run.
void refuse_contradictions(const std::vector<ExpectedRow>& rows) {
  std::map<std::string, const ExpectedRow*> first;
  for (const auto& row : rows) {
    const auto [it, fresh] = first.emplace(row.target + " × " + row.scenario, &row);
    if (fresh) continue;
    const auto& e = *it->second;
    if (e.verdict == row.verdict && e.post_requests == row.post_requests && e.effect_count == row.effect_count &&
        e.decided_by == row.decided_by) {
      continue;
    }
    throw std::invalid_argument("lines " + std::to_string(e.line) + " and " + std::to_string(row.line) +
                                " are both the row of " + it->first + " and contradict each other (" + e.verdict +
                                ", " + e.post_requests + ", " + e.effect_count + ", " + e.decided_by + " against " +
                                row.verdict + ", " + row.post_requests + ", " + row.effect_count + ", " +
                                row.decided_by + "); keep one");
  }
}

std::string key_of(const std::string& target, const std::string& scenario) { return target + " × " + scenario; }

}  // namespace

json FindingRow::to_json() const {
  return {{"target", target},
          {"scenario", scenario},
          {"verdict", verdict},
          {"post_requests", post_requests ? json(*post_requests) : json(nullptr)},
          {"effect_count", effect_count ? json(*effect_count) : json(nullptr)},
          {"expiry_decided_by", decided_by},
          {"evidence", evidence.empty() ? json(nullptr) : json(evidence)},
          {"duplicate", duplicate},
          {"note", note.empty() ? json(nullptr) : json(note)},
          {"across_instances", across_instances},
          {"clock_past_expiry", clock_past_expiry}};
}

FindingRow finding_of(const std::string& target, const json& evidence, const std::string& evidence_path) {
  FindingRow row;
  row.target = target;
  row.scenario = evidence.value("scenario_id", "");
  row.verdict = evidence.value("verdict", "ERROR");
  row.evidence = evidence_path;
  const auto& final_measurement = evidence.value("final", json());
  row.post_requests = integer_at(final_measurement, "post_requests");
  row.effect_count = integer_at(final_measurement, "effect_count");
  if (const auto& error = evidence.value("error", json()); error.is_string()) row.note = error.get<std::string>();
  // Only a scenario that ran to its closing measurement says whose clock decided.
  const bool measured = row.verdict == "SAFE" || row.verdict == "CONFLICT" || row.verdict == "HELD";
  if (measured && row.effect_count && row.post_requests) {
    decide(row, evidence);
  } else {
    row.decided_by = kNotApplicable;
  }
  return row;
}

void qualify_across_instances(std::vector<FindingRow>& rows) {
  // The control: a measured row across instances in which no clock passed
  // the key's expiry. One that deduplicated shows the instances share their
  // records; one that duplicated shows they do not.
  const FindingRow* shared = nullptr;
  const FindingRow* not_shared = nullptr;
  for (const auto& row : rows) {
    if (!row.across_instances || row.clock_past_expiry || row.verdict == "ERROR" || !row.effect_count) continue;
    if (*row.effect_count == 1) shared = &row;
    if (*row.effect_count >= 2) not_shared = &row;
  }
  if (shared != nullptr && not_shared == nullptr) return;
  const auto why = not_shared != nullptr
                       ? "the replay reached an instance that does not share the first one's records (" +
                             not_shared->scenario + " duplicated with no clock past expiry)"
                       : std::string(
                             "no control across instances was measured, so a clock cannot be told from "
                             "instances that do not share their records");
  for (auto& row : rows) {
    if (!row.across_instances || row.decided_by == kNotApplicable || row.decided_by == "none") continue;
    row.decided_by = kNotApplicable;
    row.note = why;
  }
}

FindingRow not_applicable(const std::string& target, const std::string& scenario, const std::string& why) {
  FindingRow row;
  row.target = target;
  row.scenario = scenario;
  row.verdict = kNotApplicable;
  row.decided_by = kNotApplicable;
  row.note = why;
  return row;
}

std::vector<ExpectedRow> read_expected_table(const std::string& markdown) {
  std::vector<ExpectedRow> out;
  std::istringstream in(markdown);
  std::string line;
  int number = 0;
  bool in_table = false;
  while (std::getline(in, line)) {
    ++number;
    if (!in_table) {
      auto header = split_row(line);
      in_table = line.starts_with("|") && header.size() >= 6 &&
                 std::equal(header.begin(), header.begin() + 6, kColumns.begin());
      if (in_table && !std::getline(in, line)) break;  // the |---| line
      if (in_table) ++number;
      continue;
    }
    if (!line.starts_with("|")) break;
    const auto cells = split_row(line);
    if (cells.size() < 6) {
      throw std::invalid_argument("line " + std::to_string(number) + ": a findings row has " +
                                  std::to_string(cells.size()) + " cells, not 6 or 7");
    }
    out.push_back({.target = cells[0],
                   .scenario = cells[1],
                   .verdict = cells[2],
                   .post_requests = cells[3],
                   .effect_count = cells[4],
                   .decided_by = cells[5],
                   .why = cells.size() > 6 ? cells[6] : "",
                   .line = number});
  }
  if (!in_table) {
    throw std::invalid_argument("no findings table (a header \"| " + text::join(kColumns, " | ") + " |\")");
  }
  refuse_contradictions(out);
  return out;
}

std::string markdown_table(const std::vector<FindingRow>& rows, const std::vector<ExpectedRow>& expected) {
  // The table's explanation of a row, only where the run measured that row
  // as the table has it; else what the run itself says.
  std::map<std::string, std::string> why;
  for (const auto& e : expected) {
    for (const auto& r : rows) {
      if (key_of(r.target, r.scenario) == key_of(e.target, e.scenario) && row_matches(r, e)) {
        why[key_of(e.target, e.scenario)] = e.why;
      }
    }
  }
  std::string out = "| " + text::join(kColumns, " | ") + " |\n|---|---|---|---|---|---|---|\n";
  for (const auto& r : rows) {
    const auto it = why.find(key_of(r.target, r.scenario));
    const std::vector<std::string> cells = {r.target,
                                            r.scenario,
                                            r.verdict,
                                            cell(r.post_requests),
                                            cell(r.effect_count),
                                            r.decided_by,
                                            it == why.end() ? r.note : it->second};
    out += "|";
    for (const auto& c : cells) out += " " + text::markdown_escape(c) + " |";
    out += "\n";
  }
  return out;
}

std::vector<std::string> differences(const std::vector<FindingRow>& rows, const std::vector<ExpectedRow>& expected,
                                     const std::set<std::string>& targets_run) {
  std::vector<std::string> out;
  std::map<std::string, const ExpectedRow*> by_key;
  for (const auto& e : expected) {
    if (targets_run.contains(e.target)) by_key[key_of(e.target, e.scenario)] = &e;
  }
  for (const auto& r : rows) {
    const auto key = key_of(r.target, r.scenario);
    const auto it = by_key.find(key);
    if (it == by_key.end()) {
      out.push_back(key + ": the table has no row for it; measured " + r.verdict + ", " + cell(r.post_requests) +
                    " POSTs, " + cell(r.effect_count) + " effects, decided by " + r.decided_by);
      continue;
    }
    const auto& e = *it->second;
    const std::vector<std::tuple<std::string, std::pair<std::string, std::string>, bool>> fields = {
        {"verdict", {e.verdict, r.verdict}, verdict_matches(e.verdict, r.verdict)},
        {"POSTs", {e.post_requests, cell(r.post_requests)}, count_matches(e.post_requests, r.post_requests)},
        {"effects", {e.effect_count, cell(r.effect_count)}, count_matches(e.effect_count, r.effect_count)},
        {"expiry decided by", {e.decided_by, r.decided_by}, e.decided_by == r.decided_by}};
    for (const auto& [name, values, same] : fields) {
      if (!same) {
        out.push_back(key + " (line " + std::to_string(e.line) + "): " + name + " is " + values.second +
                      ", the table says " + values.first + (r.note.empty() ? "" : " (" + r.note + ")"));
      }
    }
    by_key.erase(it);
  }
  for (const auto& [key, e] : by_key) {
    out.push_back(key + " (line " + std::to_string(e->line) + "): in the table, but the run has no such row");
  }
  return out;
}

std::string findings_markdown(const std::vector<FindingRow>& rows, const std::vector<ExpectedRow>& expected,
                              const std::vector<std::string>& differences) {
  std::string duplicates;
  for (const auto& row : rows) {
    if (row.duplicate.is_null()) continue;
    const auto& d = row.duplicate;
    duplicates +=
        "- " +
        text::markdown_escape(
            row.target + " × " + row.scenario + ": step " + d["step"].dump() + " (" + d.value("kind", std::string()) +
            ") was applied again by " + (d["instance"].is_string() ? d["instance"].get<std::string>() : row.target) +
            " at its clock " + d["instance_clock_s"].dump() + " s, the store's " +
            (d["store_clock_s"].is_null() ? std::string("(no store process)") : d["store_clock_s"].dump() + " s") +
            ", the key's expiry " + d["key_expires_at_s"].dump() + " s: " + row.evidence) +
        "\n";
  }
  std::string md = "# Findings\n\n" + markdown_table(rows, expected);
  if (!duplicates.empty()) md += "\n## The exchanges that duplicated an effect\n\n" + duplicates;
  if (!differences.empty()) {
    md += "\n## Differences from the expected table\n\n";
    for (const auto& d : differences) md += "- " + text::markdown_escape(d) + "\n";
  }
  return md;
}

}  // namespace skewbench::targets
