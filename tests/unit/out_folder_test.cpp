// OutFolder and the manifest without any service: what --out accepts, what
// publishing leaves behind, and how an interrupted publication is recovered.

#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "artifacts/manifest.hpp"
#include "artifacts/out_folder.hpp"
#include "common/files.hpp"

using namespace skewbench;
using namespace skewbench::artifacts;
using Catch::Matchers::ContainsSubstring;
using nlohmann::json;
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

namespace {

// A sandbox with files outside the --out folder that no name read from the
// folder may reach: a sibling file, a folder beside it, and a symbolic link
// inside --out that points at that folder.
struct Sandbox {
  TempDir dir{"skewbench-unit"};
  fs::path out = dir.path() / "out";
  fs::path victim = dir.path() / "victim.txt";
  fs::path outside = dir.path() / "outside";

  Sandbox() {
    fs::create_directories(out);
    fs::create_directories(outside / "scenarios");
    write_file_atomically(victim, "victim");
    write_file_atomically(outside / "summary.json", "outside");
    write_file_atomically(outside / "scenarios" / "a.json", "outside");
    fs::create_directory_symlink(outside, out / "link");
  }

  // Everything outside --out is as it was (the link inside may be gone: a
  // journal may name it, and removing a link removes only the link).
  bool untouched() const {
    return fs::exists(victim) && read_file(victim) == "victim" && read_file(outside / "summary.json") == "outside" &&
           read_file(outside / "scenarios" / "a.json") == "outside";
  }
};

std::string journal_naming(const std::string& name) { return json({{"files", json::array({name})}}).dump(); }

std::string manifest_naming(const std::string& name) {
  return json({{"schema_version", kManifestSchemaVersion},
               {"kind", "evidence_manifest"},
               {"contents", "run"},
               {"run_id", "r"},
               {"files", json::array({{{"path", name}, {"sha256", "00"}, {"bytes", 0}}})}})
      .dump();
}

// Opens the sandbox's --out with --overwrite (a refusal is an acceptable
// answer) and publishes a run into it when it opened.
void open_and_publish(const Sandbox& box) {
  try {
    OutFolder out(request(box.out, true));
    publish_run(out, {{"summary.json", "s"}}, "r2");
  } catch (const OutFolderError&) {
  }
}

}  // namespace

TEST_CASE("a publish journal or manifest naming a path outside --out is refused, and nothing outside is touched") {
  const std::string long_part(300, 'a');
  const auto name = GENERATE_COPY(
      values<std::string>({"../victim.txt", "/victim.txt", "scenarios/../../victim.txt", "link/summary.json",
                           "link/scenarios/a.json", "./summary.json", "a//b", "summary.json/",
                           std::string("summary.json\0x", 14), long_part, std::string(5000, 'b'), ""}));
  const auto file = GENERATE(as<std::string>{}, kJournalFile, kManifestFile);
  INFO(file << " names " << json(name).dump());
  Sandbox box;
  write_file_atomically(box.out / file, file == kJournalFile ? journal_naming(name) : manifest_naming(name));
  const auto why = refusal(request(box.out, true));
  CHECK_THAT(why, ContainsSubstring("leaves the folder") || ContainsSubstring("reach outside"));
  CHECK(box.untouched());
  CHECK(fs::is_symlink(box.out / "link"));
}

TEST_CASE("an absolute path in the publish journal ends at once: the parent walk terminates") {
  Sandbox box;
  write_file_atomically(box.out / kJournalFile, journal_naming(box.victim.string()));
  CHECK_THAT(refusal(request(box.out, true)), ContainsSubstring("is absolute"));
  CHECK(box.untouched());
}

TEST_CASE("fuzz: hostile names in the journal and the manifest never touch anything outside --out") {
  // Seeded, so a failure names the case that reproduces it.
  const std::vector<std::string> parts = {"..",
                                          ".",
                                          "",
                                          "link",
                                          "scenarios",
                                          "a.json",
                                          "x",
                                          "manifest.json",
                                          "summary.json",
                                          std::string(1, '\0'),
                                          "\x01",
                                          std::string(256, 'z'),
                                          "/",
                                          "..."};
  std::mt19937_64 random(20261201);
  for (int round = 0; round < 400; ++round) {
    std::string name;
    const auto length = 1 + random() % 5;
    for (std::uint64_t i = 0; i < length; ++i) {
      if (i > 0 && random() % 4 != 0) name += '/';
      name += parts[random() % parts.size()];
    }
    if (random() % 5 == 0) name = "/" + name;
    const bool in_journal = random() % 2 == 0;
    INFO("round " << round << ": " << (in_journal ? "journal" : "manifest") << " names " << json(name).dump());
    Sandbox box;
    write_file_atomically(box.out / (in_journal ? kJournalFile : kManifestFile),
                          in_journal ? journal_naming(name) : manifest_naming(name));
    open_and_publish(box);
    REQUIRE(box.untouched());
  }
}

TEST_CASE("of many openers racing for a new --out, the losers never remove the lock the winner holds") {
  // Each round: several threads open the same absent folder at once (flock
  // locks of separate opens exclude each other within one process too). A
  // loser that removed the winner's lock file would let a later opener in
  // while the winner still writes.
  TempDir dir("skewbench-unit");
  for (int round = 0; round < 100; ++round) {
    const auto path = dir.path() / ("out-" + std::to_string(round));
    std::atomic<int> ready{0};
    std::mutex mutex;
    std::vector<std::unique_ptr<OutFolder>> winners;
    std::vector<std::string> refusals;
    std::vector<std::thread> openers;
    for (int t = 0; t < 4; ++t) {
      openers.emplace_back([&] {
        ++ready;
        while (ready.load() < 4) {
        }
        try {
          auto folder = std::make_unique<OutFolder>(request(path));
          std::lock_guard lock(mutex);
          winners.push_back(std::move(folder));
        } catch (const OutFolderError& e) {
          std::lock_guard lock(mutex);
          refusals.emplace_back(e.what());
        }
      });
    }
    for (auto& t : openers) t.join();
    INFO("round " << round);
    REQUIRE(winners.size() == 1);
    for (const auto& why : refusals) CHECK_THAT(why, ContainsSubstring("is in use by pid"));
    CHECK(fs::exists(path / kLockFile));
    // The folder is still held: one more opener is refused.
    CHECK_THAT(refusal(request(path)), ContainsSubstring("is in use by"));
  }
}
