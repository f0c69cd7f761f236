// The file rules every command follows (docs/evidence.md, "Files skewbench
// reads and writes"), held against the real skewbench executable: inputs are
// regular files (a FIFO, a device or a link is refused before it is opened),
// nothing is written through a link, an existing output is replaced only with
// --overwrite, and contradictory or unknown input is refused before anything
// starts. A command that could hang runs under timeout(1): exit 124 is a hang.

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <sys/stat.h>

#include "support/cli.hpp"
#include "support/sweep_fixture.hpp"

using namespace skewbench;
using namespace skewbench::testing;
using Catch::Matchers::ContainsSubstring;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

constexpr int kVerifyProblems = 1;  // docs/cli.md: verify found a problem

CommandResult skewbench_within_20s(std::vector<std::string> args) {
  args.insert(args.begin(), {"timeout", "20", SKEWBENCH_CLI_BIN});
  return run_command(args);
}

// An in-process run of one scenario: an evidence folder without services.
fs::path run_folder(const fs::path& out) {
  const auto r = run_skewbench(
      {"run", source_path("scenarios/018-uncertainty.json"), "--engine", "in-process", "--out", out.string(), "-q"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return out;
}

void make_fifo(const fs::path& path) {
  fs::remove(path);
  REQUIRE(::mkfifo(path.c_str(), 0644) == 0);
}

std::size_t count_of(const std::string& text, const std::string& words) {
  std::size_t n = 0;
  for (auto at = text.find(words); at != std::string::npos; at = text.find(words, at + 1)) ++n;
  return n;
}

// A target whose store's command is `store_command`: enough to load, and
// nothing it needs is missing. A refusal comes before any of it starts.
fs::path write_target(const fs::path& targets_dir, const std::string& store_command) {
  const json target = {{"name", "mine"},
                       {"description", "a target the file rules refuse before it starts"},
                       {"library", "none"},
                       {"install", "true"},
                       {"needs", json::array({"sh"})},
                       {"service", {{"command", "sh {target_dir}/service.sh {port}"}}},
                       {"store", {{"name", "sleeper"}, {"command", store_command}}}};
  fs::create_directories(targets_dir / "mine");
  write_file_atomically(targets_dir / "mine" / "target.json", target.dump(2));
  return targets_dir;
}

}  // namespace

TEST_CASE("report refuses a maps/ that is a symbolic link before it writes any file, and writes nothing through it") {
  TempDir dir("skewbench-file-rules");
  TempDir elsewhere("skewbench-file-rules");
  write_tiny_sweep(dir.path());
  fs::create_directory_symlink(elsewhere.path(), dir.path() / "maps");
  const auto r = run_skewbench({"report", dir.path().string()});
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, ContainsSubstring("passes through the symbolic link " + (dir.path() / "maps").string()));
  for (const auto& entry : fs::directory_iterator(elsewhere.path())) {
    CHECK(entry.path().filename() == kTempDirOwnerFile);  // no map went through the link
  }
  CHECK_FALSE(fs::exists(dir.path() / "report.html"));
}

TEST_CASE("report replaces an earlier report only with --overwrite") {
  TempDir dir("skewbench-file-rules");
  write_tiny_sweep(dir.path());
  REQUIRE(run_skewbench({"report", dir.path().string()}).exit_code == 0);
  const auto before = read_file(dir.path() / "report.html");
  const auto again = run_skewbench({"report", dir.path().string()});
  INFO(again.output);
  CHECK(again.exit_code == 2);
  CHECK_THAT(again.output, ContainsSubstring((dir.path() / "report.html").string() + " already exists"));
  CHECK(read_file(dir.path() / "report.html") == before);
  CHECK(run_skewbench({"report", dir.path().string(), "--overwrite"}).exit_code == 0);
}

TEST_CASE("a FIFO as summary.json is named by verify and compare, which neither hang nor open it") {
  TempDir dir("skewbench-file-rules");
  const auto base = run_folder(dir.path() / "base");
  const auto candidate = run_folder(dir.path() / "candidate");
  make_fifo(candidate / "summary.json");
  const auto verified = skewbench_within_20s({"verify", candidate.string()});
  INFO(verified.output);
  CHECK(verified.exit_code == kVerifyProblems);
  CHECK_THAT(verified.output, ContainsSubstring("summary.json: is a FIFO, not a regular file"));
  const auto compared = skewbench_within_20s({"compare", base.string(), candidate.string()});
  INFO(compared.output);
  CHECK(compared.exit_code == 2);
  CHECK_THAT(compared.output, ContainsSubstring((candidate / "summary.json").string() + " is a FIFO"));
}

TEST_CASE("a symbolic link to /dev/zero as summary.json is named once by verify and read by no command") {
  TempDir dir("skewbench-file-rules");
  const auto base = run_folder(dir.path() / "base");
  const auto candidate = run_folder(dir.path() / "candidate");
  fs::remove(candidate / "summary.json");
  fs::create_symlink("/dev/zero", candidate / "summary.json");
  const auto verified = skewbench_within_20s({"verify", candidate.string()});
  INFO(verified.output);
  CHECK(verified.exit_code == kVerifyProblems);  // not 134 (bad_alloc) nor 124 (still reading)
  CHECK_THAT(verified.output, ContainsSubstring("is a symbolic link to /dev/zero"));
  CHECK(count_of(verified.output, "symbolic link") == 1);
  const auto compared = skewbench_within_20s({"compare", base.string(), candidate.string()});
  INFO(compared.output);
  CHECK(compared.exit_code == 2);
  CHECK_THAT(compared.output, ContainsSubstring("is a symbolic link to /dev/zero"));
}

TEST_CASE("a FIFO as a sweep's cells.jsonl or as a scenario file is refused with exit 2 naming it") {
  TempDir dir("skewbench-file-rules");
  write_tiny_sweep(dir.path());
  make_fifo(dir.path() / "cells.jsonl");
  auto r = skewbench_within_20s({"report", dir.path().string()});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, ContainsSubstring((dir.path() / "cells.jsonl").string() + " is a FIFO"));
  make_fifo(dir.path() / "scenario.json");
  r = skewbench_within_20s({"run", (dir.path() / "scenario.json").string(), "--engine", "in-process", "--out",
                            (dir.path() / "out").string()});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, ContainsSubstring((dir.path() / "scenario.json").string() + " is a FIFO"));
  CHECK_FALSE(fs::exists(dir.path() / "out"));
}

TEST_CASE("targets --out replaces an earlier findings.md or findings.json only with --overwrite") {
  TempDir dir("skewbench-file-rules");
  const auto targets_dir = write_target(dir.path() / "targets", "sleep 600 {store_port}");
  const auto out = dir.path() / "out";
  for (const char* name : {"findings.md", "findings.json"}) {
    fs::remove_all(out);
    fs::create_directories(out);
    write_file_atomically(out / name, "an earlier run's\n");
    const auto r = run_skewbench({"targets", "mine", "--targets-dir", targets_dir.string(), "--out", out.string(), "-q",
                                  "--scenarios", source_path("scenarios/targets/015-same-key-after-lost-ack.json")});
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, ContainsSubstring((out / name).string() + " exists"));
    CHECK_THAT(r.output, ContainsSubstring("--overwrite"));
    CHECK(read_file(out / name) == "an earlier run's\n");
    CHECK_FALSE(fs::exists(out / "mine"));  // nothing started
  }
}

TEST_CASE("targets --expect with two contradictory rows for one target and scenario is exit 2 naming both lines") {
  TempDir dir("skewbench-file-rules");
  const auto targets_dir = write_target(dir.path() / "targets", "sleep 600 {store_port}");
  const auto table = dir.path() / "expected.md";
  write_file_atomically(table,
                        "| target | scenario | verdict | POSTs | effects | expiry decided by | why |\n"
                        "|---|---|---|---|---|---|---|\n"
                        "| mine | 015-same-key-after-lost-ack | SAFE | 2 | 1 | n/a | deduplicated |\n"
                        "| mine | 015-same-key-after-lost-ack | CONFLICT | 2 | 2 | n/a | duplicated |\n");
  const auto out = dir.path() / "out";
  const auto r =
      run_skewbench({"targets", "mine", "--targets-dir", targets_dir.string(), "--out", out.string(), "-q", "--expect",
                     table.string(), "--scenarios", source_path("scenarios/targets/015-same-key-after-lost-ack.json")});
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, ContainsSubstring("lines 3 and 4 are both the row of mine × 015-same-key-after-lost-ack"));
  CHECK_FALSE(fs::exists(out / "mine"));
}

TEST_CASE(
    "a target whose store command holds an unknown placeholder is exit 2 naming the field, before anything starts") {
  TempDir dir("skewbench-file-rules");
  const auto targets_dir = write_target(dir.path() / "targets", "redis-server --port {STORE_PORT}");
  const auto out = dir.path() / "out";
  auto r = run_skewbench({"targets", "mine", "--targets-dir", targets_dir.string(), "--out", out.string(), "-q",
                          "--scenarios", source_path("scenarios/targets/015-same-key-after-lost-ack.json")});
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, ContainsSubstring("$.store.command: {STORE_PORT} is not a placeholder here"));
  CHECK_FALSE(fs::exists(out / "mine"));
  r = run_skewbench({"run", source_path("scenarios/targets/015-same-key-after-lost-ack.json"), "--target",
                     (targets_dir / "mine").string(), "--out", out.string(), "-q"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, ContainsSubstring("$.store.command: {STORE_PORT}"));
  CHECK_FALSE(fs::exists(out));
}
