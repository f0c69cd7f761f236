// A full filesystem while a run writes its evidence: the folder holds the old
// evidence whole or the new evidence whole, never a mix, and the run exits 3
// saying why. Mounts small tmpfs file systems, so it needs root; it skips
// itself elsewhere.

#include <map>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <sys/statvfs.h>
#include <unistd.h>

#include "support/cli.hpp"
#include "support/shared_stack.hpp"

using namespace skewbench;
using namespace skewbench::testing;
using Catch::Matchers::ContainsSubstring;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// A tmpfs of the given size, unmounted when the object goes, whatever happened.
class SmallTmpfs {
 public:
  SmallTmpfs(const fs::path& where, const std::string& size) : path_(where) {
    fs::create_directories(path_);
    const auto r = run_command({"mount", "-t", "tmpfs", "-o", "size=" + size + ",mode=0755", "tmpfs", path_.string()});
    mounted_ = r.exit_code == 0;
    error_ = r.output;
  }
  ~SmallTmpfs() {
    if (mounted_ && run_command({"umount", path_.string()}).exit_code != 0)
      run_command({"umount", "-l", path_.string()});
  }
  SmallTmpfs(const SmallTmpfs&) = delete;
  SmallTmpfs& operator=(const SmallTmpfs&) = delete;

  bool mounted() const { return mounted_; }
  const std::string& error() const { return error_; }
  const fs::path& path() const { return path_; }

  // Takes all but `leave` bytes of the free space with one file.
  void fill_leaving(std::uintmax_t leave) const {
    struct statvfs st {};
    REQUIRE(::statvfs(path_.c_str(), &st) == 0);
    const auto free_bytes = static_cast<std::uintmax_t>(st.f_bavail) * st.f_frsize;
    REQUIRE(free_bytes > leave);
    write_file_atomically(path_ / "filler", std::string(free_bytes - leave, 'x'));
  }

 private:
  fs::path path_;
  bool mounted_ = false;
  std::string error_;
};

CommandResult run_into(const fs::path& out, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"run", shared_service_scenarios(), "--out", out.string()};
  const auto services = shared_stack().service_args();
  args.insert(args.end(), services.begin(), services.end());
  args.insert(args.end(), extra.begin(), extra.end());
  return run_skewbench(args);
}

// Every file and its bytes, but the lock file (which names its latest holder).
std::map<std::string, std::string> contents(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    const auto name = entry.path().lexically_relative(dir).generic_string();
    if (entry.is_regular_file() && name != ".skewbench.lock") out[name] = read_file(entry.path());
  }
  return out;
}

// Every file of the run names the same run id as summary.json.
void check_one_run(const fs::path& dir) {
  const auto summary = read_json(dir / "summary.json");
  const auto run_id = summary["environment"]["run_id"];
  CHECK(read_json(dir / "result.json")["environment"]["run_id"] == run_id);
  CHECK(read_json(dir / "manifest.json")["run_id"] == run_id);
  for (const auto& row : summary["scenarios"]) {
    CHECK(read_json(dir / "scenarios" / (row["id"].get<std::string>() + ".json"))["environment"]["run_id"] == run_id);
  }
  CHECK_THAT(read_file(dir / "RESULT.md"), ContainsSubstring(run_id.get<std::string>()));
}

}  // namespace

TEST_CASE("a fresh --out on a 64 KiB file system: exit 3, and no summary, RESULT.md or manifest is left") {
  if (::geteuid() != 0) SKIP("mounting a tmpfs needs root");
  TempDir dir("skewbench-diskfull");
  SmallTmpfs fs64(dir.path() / "mnt", "64k");
  if (!fs64.mounted()) SKIP("cannot mount a tmpfs here: " << fs64.error());
  const auto out = fs64.path() / "out";
  const auto r = run_into(out);
  INFO(r.output);
  CHECK(r.exit_code == 3);
  CHECK_THAT(r.output, ContainsSubstring("No space left on device"));
  CHECK_THAT(r.output, ContainsSubstring("earlier contents are unchanged"));
  // Nothing but the lock file: no partial evidence, no hidden leftovers.
  for (const auto& entry : fs::directory_iterator(out)) CHECK(entry.path().filename() == ".skewbench.lock");
  CHECK(run_skewbench({"verify", out.string()}).exit_code == 1);
}

TEST_CASE("run --overwrite onto a full file system keeps the old evidence whole; with space, the new one is whole") {
  if (::geteuid() != 0) SKIP("mounting a tmpfs needs root");
  TempDir dir("skewbench-diskfull");
  SmallTmpfs small(dir.path() / "mnt", "1m");
  if (!small.mounted()) SKIP("cannot mount a tmpfs here: " << small.error());
  const auto out = small.path() / "out";
  const auto first = run_into(out);
  INFO(first.output);
  REQUIRE(first.exit_code == 0);
  const auto old_files = contents(out);

  small.fill_leaving(16 * 1024);
  const auto full = run_into(out, {"--overwrite"});
  INFO(full.output);
  CHECK(full.exit_code == 3);
  CHECK_THAT(full.output, ContainsSubstring("No space left on device"));
  CHECK(contents(out) == old_files);
  check_one_run(out);
  CHECK(run_skewbench({"verify", out.string()}).exit_code == 0);

  fs::remove(small.path() / "filler");
  const auto again = run_into(out, {"--overwrite"});
  INFO(again.output);
  REQUIRE(again.exit_code == 0);
  CHECK(read_json(out / "summary.json")["environment"]["run_id"] !=
        json::parse(old_files.at("summary.json"))["environment"]["run_id"]);
  check_one_run(out);
  CHECK(run_skewbench({"verify", out.string()}).exit_code == 0);
}
