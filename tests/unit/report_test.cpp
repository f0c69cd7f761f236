// skewbench report on a crafted sweep directory: one SVG heat map per policy
// per map, the legend, the marks, escaped text, the totals, no external
// references, and cells without a record drawn as not run.

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "common/files.hpp"
#include "report/report.hpp"
#include "support/sweep_fixture.hpp"

using namespace skewbench;
using namespace skewbench::testing;
using Catch::Matchers::ContainsSubstring;
namespace fs = std::filesystem;

namespace {

std::size_t occurrences(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++n;
  return n;
}

std::string without(std::string text, const std::string& needle) {
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at)) text.erase(at, needle.size());
  return text;
}

struct Rendered {
  TempDir dir{"skewbench-report-unit"};
  report::ReportFiles files;
  std::string html;

  Rendered() {
    write_tiny_sweep(dir.path());
    files = report::write_report(dir.path(), dir.path(), false);
    html = read_file(files.html);
  }
  std::string map(const std::string& name) const { return read_file(dir.path() / "maps" / name); }
};

const std::string kBetaEpsMap = "beta__b___offset_s__by__eps_s.svg";

}  // namespace

TEST_CASE("the report draws one SVG heat map per policy per map that applies to it, inline and as a file") {
  Rendered r;
  CHECK(occurrences(r.html, "<svg xmlns=\"http://www.w3.org/2000/svg\"") == 3);
  REQUIRE(r.files.maps.size() == 3);
  CHECK(r.files.maps[0].filename() == "alpha__offset_s__by__recovery_s.svg");
  CHECK(r.files.maps[1].filename() == kBetaEpsMap);
  CHECK(r.files.maps[2].filename() == "beta__b___offset_s__by__recovery_s.svg");
  for (const auto& path : r.files.maps) {
    const auto svg = read_file(path);
    CHECK(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
    CHECK_THAT(r.html, ContainsSubstring(svg));
  }
}

TEST_CASE("the report has a legend with every verdict and its colour") {
  Rendered r;
  for (const auto* verdict : {"SAFE", "CONFLICT", "HELD", "ERROR", "not run"}) {
    CHECK_THAT(r.html, ContainsSubstring(std::string("<strong>") + verdict + "</strong>"));
  }
  for (const auto* colour : {"#009E73", "#D55E00", "#F0E442", "#332288"}) {
    CHECK_THAT(r.html, ContainsSubstring(colour));
    CHECK_THAT(r.map(kBetaEpsMap), ContainsSubstring(colour));
  }
}

TEST_CASE("the report marks a published point on its policy's maps with its verdict") {
  Rendered r;
  const auto alpha = r.map("alpha__offset_s__by__recovery_s.svg");
  CHECK_THAT(alpha, ContainsSubstring(">#018 &lt;mark&gt; &amp; co<"));
  CHECK_THAT(alpha, ContainsSubstring(">#018 &lt;mark&gt; &amp; co: CONFLICT<"));
  CHECK_THAT(alpha, ContainsSubstring("<circle"));
  CHECK_THAT(r.map(kBetaEpsMap), ContainsSubstring(">beta point: HELD<"));
  CHECK_THAT(r.map(kBetaEpsMap), !ContainsSubstring("#018 &lt;mark&gt;"));
}

TEST_CASE("the report escapes every text it takes from the sweep") {
  Rendered r;
  CHECK_THAT(r.html, ContainsSubstring("tiny &lt;grid&gt; &amp; &quot;quotes&quot;"));
  CHECK_THAT(r.html, ContainsSubstring("beta &lt;b&gt;"));
  CHECK_THAT(r.html, ContainsSubstring("a warning with &lt;angle&gt; brackets"));
  CHECK_THAT(r.html, ContainsSubstring("17.2 &lt;test&gt;"));
  for (const auto* raw : {"<grid>", "<b>", "<mark>", "<angle>", "<test>"}) CHECK_THAT(r.html, !ContainsSubstring(raw));
}

TEST_CASE("the report shows the per-policy totals from sweep.json") {
  Rendered r;
  CHECK_THAT(r.html, ContainsSubstring("<tr><td>alpha</td><td>4</td><td>2</td><td>0</td><td>0</td><td>6</td></tr>"));
  CHECK_THAT(r.html,
             ContainsSubstring("<tr><td>beta &lt;b&gt;</td><td>6</td><td>5</td><td>5</td><td>1</td><td>17</td></tr>"));
  CHECK_THAT(r.html, ContainsSubstring("23 of 24 cells run"));
  CHECK_THAT(r.html, ContainsSubstring("c0ffee"));
}

TEST_CASE("the report references nothing outside itself") {
  Rendered r;
  const auto rest = without(r.html, "xmlns=\"http://www.w3.org/2000/svg\"");
  CHECK_THAT(rest, !ContainsSubstring("http://"));
  CHECK_THAT(rest, !ContainsSubstring("https://"));
  CHECK_THAT(rest, !ContainsSubstring("<script"));
  CHECK_THAT(rest, !ContainsSubstring("<link"));
  CHECK_THAT(rest, !ContainsSubstring("<img"));
  CHECK_THAT(rest, !ContainsSubstring("@import"));
}

TEST_CASE("a cell without a record is drawn as not run, and the incomplete sweep is a warning") {
  Rendered r;
  const auto beta = r.map(kBetaEpsMap);
  CHECK_THAT(beta, ContainsSubstring("fill=\"url(#map1-notrun)\"><title>offset_s = 0, eps_s = 0: not run</title>"));
  CHECK_THAT(beta, ContainsSubstring(">not run 1<"));
  CHECK_THAT(r.html, ContainsSubstring("incomplete sweep: 23 of 24 cells were run"));
  CHECK_THAT(r.map("alpha__offset_s__by__recovery_s.svg"), !ContainsSubstring("not run"));
}

TEST_CASE("a map over an axis a policy ignores is not drawn for it, and its section says so once") {
  Rendered r;
  CHECK_FALSE(fs::exists(r.dir.path() / "maps" / "alpha__offset_s__by__eps_s.svg"));
  CHECK(occurrences(r.html, "node_local does not use eps_s: the maps over it are not drawn for this policy.") == 1);
  CHECK_THAT(r.html, !ContainsSubstring(">n/a</text>"));
}

TEST_CASE("the report shows the grid's description, each axis's meaning, and when and on what it ran") {
  Rendered r;
  CHECK_THAT(r.html, ContainsSubstring("a tiny grid &lt;for&gt; tests"));
  CHECK_THAT(r.html, ContainsSubstring("node B&#39;s clock offset; sets <code>/nodes/1/clock_offset_s</code>"));
  CHECK_THAT(r.html, ContainsSubstring("sets <code>/steps/2/at_s</code> in the base scenario"));
  CHECK_THAT(r.html, ContainsSubstring("ran 2026-11-30T01:00:00Z to 2026-11-30T01:02:00Z on testhost"));
}

TEST_CASE("the report shows policy parameters as text, not JSON") {
  Rendered r;
  CHECK_THAT(r.html, ContainsSubstring("policy <strong>uncertainty</strong>: max_clock_error_s = 5"));
  CHECK_THAT(r.html, ContainsSubstring("policy <strong>node_local</strong>: no parameters"));
  CHECK_THAT(r.html, !ContainsSubstring("{&quot;name&quot;"));
}

TEST_CASE("the legend says CONFLICT means two or more effects") {
  Rendered r;
  CHECK_THAT(r.html, ContainsSubstring("<strong>CONFLICT</strong> (C): two or more effects"));
}

TEST_CASE("the report is byte-for-byte the same for the same sweep") {
  Rendered a;
  Rendered b;
  CHECK(a.html == b.html);
  CHECK(a.map(kBetaEpsMap) == b.map(kBetaEpsMap));
  CHECK(a.html == read_file(report::write_report(a.dir.path(), a.dir.path(), true).html));
}

TEST_CASE("the report refuses a directory without a sweep, naming the file") {
  TempDir dir("skewbench-report-unit");
  try {
    report::write_report(dir.path(), dir.path(), false);
    FAIL("expected ReportInputError");
  } catch (const report::ReportInputError& e) {
    CHECK_THAT(e.what(), ContainsSubstring("not a sweep directory"));
    CHECK_THAT(e.what(), ContainsSubstring("sweep.json"));
  }
}

TEST_CASE("the report refuses a malformed cells.jsonl line, naming the file and line") {
  TempDir dir("skewbench-report-unit");
  write_tiny_sweep(dir.path());
  const auto cells = read_file(dir.path() / "cells.jsonl");
  const auto second = cells.find('\n') + 1;
  write_file_atomically(dir.path() / "cells.jsonl",
                        cells.substr(0, second) + "{\"policy\":\"alpha\",\"parameters\":{},\"verdict\":\"MAYBE\"}\n");
  try {
    report::write_report(dir.path(), dir.path(), false);
    FAIL("expected ReportInputError");
  } catch (const report::ReportInputError& e) {
    CHECK_THAT(e.what(), ContainsSubstring("cells.jsonl:2: $.verdict"));
  }
}

TEST_CASE("the report refuses a sweep.json that is not a sweep summary, naming the field") {
  TempDir dir("skewbench-report-unit");
  write_tiny_sweep(dir.path());
  auto summary = nlohmann::json::parse(read_file(dir.path() / "sweep.json"));
  summary["grid"]["axes"][1].erase("values");
  write_file_atomically(dir.path() / "sweep.json", summary.dump());
  try {
    report::write_report(dir.path(), dir.path(), false);
    FAIL("expected ReportInputError");
  } catch (const report::ReportInputError& e) {
    CHECK_THAT(e.what(), ContainsSubstring("sweep.json: $.grid.axes[1].values"));
  }
}

TEST_CASE("the report writes nothing through a maps/ that is a symbolic link, and refuses before any file") {
  TempDir dir("skewbench-report-unit");
  TempDir elsewhere("skewbench-report-unit");
  write_tiny_sweep(dir.path());
  std::filesystem::create_directory_symlink(elsewhere.path(), dir.path() / "maps");
  try {
    report::write_report(dir.path(), dir.path(), true);
    FAIL("expected ReportInputError");
  } catch (const report::ReportInputError& e) {
    CHECK_THAT(e.what(), ContainsSubstring("passes through the symbolic link " + (dir.path() / "maps").string()));
  }
  for (const auto& entry : std::filesystem::directory_iterator(elsewhere.path())) {
    CHECK(entry.path().filename() == kTempDirOwnerFile);  // no map
  }
  CHECK_FALSE(std::filesystem::exists(dir.path() / "report.html"));
}

TEST_CASE("the report replaces an earlier one only when asked to, and never a link in its place") {
  TempDir dir("skewbench-report-unit");
  write_tiny_sweep(dir.path());
  report::write_report(dir.path(), dir.path(), false);
  const auto html = dir.path() / "report.html";
  write_file_atomically(html, "mine");
  try {
    report::write_report(dir.path(), dir.path(), false);
    FAIL("expected ReportInputError");
  } catch (const report::ReportInputError& e) {
    CHECK_THAT(e.what(), ContainsSubstring(html.string() + " already exists"));
    CHECK_THAT(e.what(), ContainsSubstring("--overwrite"));
  }
  CHECK(read_file(html) == "mine");
  report::write_report(dir.path(), dir.path(), true);
  CHECK(read_file(html) != "mine");

  std::filesystem::remove(html);
  std::filesystem::create_symlink(dir.path() / "sweep.json", html);
  CHECK_THROWS_WITH(report::write_report(dir.path(), dir.path(), true), ContainsSubstring("is a symbolic link"));
  CHECK(std::filesystem::is_symlink(html));
}

TEST_CASE("map file names keep only file-name-safe characters") {
  CHECK(report::map_file_name("a/b c", "x..y", "é") == "a_b_c__x..y__by____.svg");
}
