// OutFolder and the manifest without any service: what --out accepts, what
// publishing leaves behind, and how an interrupted publication is recovered.

#include <map>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "common/files.hpp"
#include "evidence/manifest.hpp"
#include "evidence/out_folder.hpp"

using namespace skewbench;
using namespace skewbench::evidence;
using Catch::Matchers::ContainsSubstring;
namespace fs = std::filesystem;

namespace {

OutFolderRequest request(const fs::path& path, bool overwrite = false) {
  return {
      .path = path, .kind = FolderKind::kRun, .overwrite = overwrite, .resume = false, .inputs = {}, .command = "run"};
}

// Publishes files {name: bytes} as a run.
void publish_run(OutFolder& out, const std::map<std::string, std::string>& files, const std::string& run_id) {
  const auto incoming = out.make_incoming(run_id);
  for (const auto& [name, bytes] : files) {
    fs::create_directories((incoming / name).parent_path());
    write_file_unsynced(incoming / name, bytes);
  }
  out.publish(incoming, FolderKind::kRun, run_id);
}

std::string refusal(const OutFolderRequest& r) {
  try {
    OutFolder folder(r);
  } catch (const OutFolderError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a second lock on the same file is refused and names the holder") {
  TempDir dir("skewbench-unit");
  FileLock first(dir.path() / "lock", "pid 1 (first)");
  REQUIRE(first.held());
  FileLock second(dir.path() / "lock", "pid 2 (second)");
  CHECK_FALSE(second.held());
  CHECK(second.holder() == "pid 1 (first)");
}

TEST_CASE("an --out must keep clear of every input: not equal, not containing, not inside") {
  TempDir dir("skewbench-unit");
  fs::create_directories(dir.path() / "inputs" / "deep");
  write_file_atomically(dir.path() / "inputs" / "deep" / "a.json", "{}");
  auto r = request(dir.path() / "inputs");
  r.inputs = {dir.path() / "inputs" / "deep" / "a.json"};
  CHECK_THAT(refusal(r), ContainsSubstring("contains the input"));
  r.path = dir.path() / "inputs" / "deep" / "a.json";
  CHECK_THAT(refusal(r), ContainsSubstring("is the input"));
  r.path = dir.path() / "inputs" / "deep" / "out";
  r.inputs = {dir.path() / "inputs"};
  CHECK_THAT(refusal(r), ContainsSubstring("lies inside the input"));
  CHECK_FALSE(fs::exists(dir.path() / "inputs" / "deep" / "out"));
  r.path = dir.path() / "inputs" / ".." / "inputs";  // the same folder, spelt differently
  CHECK_THAT(refusal(r), ContainsSubstring("is the input"));
  r.path = dir.path() / "elsewhere";
  CHECK(refusal(r).empty());
}

TEST_CASE("publishing replaces exactly the files the previous manifest listed") {
  TempDir dir("skewbench-unit");
  const auto path = dir.path() / "out";
  {
    OutFolder out(request(path));
    publish_run(out, {{"scenarios/a.json", "a1"}, {"scenarios/b.json", "b1"}, {"summary.json", "s1"}}, "r1");
  }
  write_file_atomically(path / "scenarios" / "notes.txt", "mine");
  CHECK_THAT(refusal(request(path)), ContainsSubstring("already holds a run's evidence"));
  {
    OutFolder out(request(path, true));
    REQUIRE(out.previous());
    CHECK(out.previous()->run_id == "r1");
    publish_run(out, {{"scenarios/a.json", "a2"}, {"summary.json", "s2"}}, "r2");
  }
  CHECK(read_file(path / "scenarios" / "a.json") == "a2");
  CHECK_FALSE(fs::exists(path / "scenarios" / "b.json"));
  CHECK(read_file(path / "scenarios" / "notes.txt") == "mine");
  const auto manifest = read_manifest(path);
  REQUIRE(manifest);
  CHECK(manifest->run_id == "r2");
  REQUIRE(manifest->files.size() == 2);
  CHECK(manifest->files[0].path == "scenarios/a.json");
  CHECK(manifest->files[0].sha256 == file_sha256(path / "scenarios" / "a.json"));
  CHECK(evidence_files_under(path) ==
        std::vector<std::string>{"manifest.json", "scenarios/a.json", "scenarios/notes.txt", "summary.json"});
}

TEST_CASE("a publication cut short is refused without --overwrite and cleaned up with it") {
  TempDir dir("skewbench-unit");
  const auto path = dir.path() / "out";
  fs::create_directories(path / "scenarios");
  // What a run killed between removing the old files and writing its manifest leaves.
  write_file_atomically(path / "scenarios" / "a.json", "half");
  write_file_atomically(path / "mine.txt", "mine");
  write_file_atomically(path / kJournalFile, R"({"files":["scenarios/a.json","summary.json"]})");
  CHECK_THAT(refusal(request(path)), ContainsSubstring("was interrupted"));
  OutFolder out(request(path, true));
  CHECK_FALSE(fs::exists(path / "scenarios"));
  CHECK_FALSE(fs::exists(path / kJournalFile));
  CHECK(read_file(path / "mine.txt") == "mine");  // not skewbench's: kept
}

TEST_CASE("a manifest entry that leaves the folder is rejected") {
  TempDir dir("skewbench-unit");
  write_file_atomically(dir.path() / kManifestFile,
                        R"({"schema_version":"skewbench-manifest/1","kind":"evidence_manifest","contents":"run",)"
                        R"("run_id":"r","files":[{"path":"../x","sha256":"00","bytes":0}]})");
  CHECK_THROWS_AS(read_manifest(dir.path()), ManifestError);
}
