#pragma once

// The --out folder of run, sweep and merge: checked, locked and probed before
// any service starts, and written so that a reader never sees a mix of two
// runs' evidence.
//
// Rules (docs/evidence.md):
//  - An --out that equals, contains or lies inside an input path is refused.
//  - The folder is skewbench's when it holds manifest.json; one that is not
//    empty and has no manifest is refused, with or without --overwrite.
//  - --overwrite removes only the files the old manifest lists.
//  - A run folder never receives a sweep, nor a sweep folder a run.
//  - DIR/.skewbench.lock is held (flock) from the check to the end; a second
//    process is refused at once and told who holds it.
//  - A run's files are written into DIR/.skewbench-incoming-<run id>/, flushed, and
//    then renamed into place: the old summary.json and manifest.json are
//    removed first and the new ones arrive last, so a reader sees the old
//    evidence whole, the new evidence whole, or no summary and no manifest.

#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "artifacts/manifest.hpp"
#include "common/files.hpp"

namespace skewbench::artifacts {

inline constexpr const char* kLockFile = ".skewbench.lock";
inline constexpr const char* kJournalFile = ".skewbench-publishing.json";
inline constexpr const char* kIncomingPrefix = ".skewbench-incoming-";
// Every name of skewbench's own bookkeeping in an --out folder starts so.
inline constexpr const char* kOwnHiddenPrefix = ".skewbench";

// The folder cannot be used as asked: exit code 2, nothing started.
class OutFolderError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct OutFolderRequest {
  std::filesystem::path path;
  FolderKind kind = FolderKind::kRun;
  bool overwrite = false;
  bool resume = false;                        // a sweep that continues the one in the folder
  std::vector<std::filesystem::path> inputs;  // files and folders --out must keep clear of
  std::string command;                        // "run", "sweep", "merge", "report": for the lock's holder line
};

// True when `path` is skewbench's own bookkeeping, never evidence or the user's.
bool is_own_hidden_name(const std::string& name);

class OutFolder {
 public:
  // Checks, creates, locks and probes the folder. Throws OutFolderError.
  explicit OutFolder(const OutFolderRequest& request);
  OutFolder(const OutFolder&) = delete;
  OutFolder& operator=(const OutFolder&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // The manifest found when the folder was opened (nullopt: a new folder).
  const std::optional<Manifest>& previous() const { return previous_; }

  // A fresh hidden folder inside path() for a run's files.
  std::filesystem::path make_incoming(const std::string& run_id) const;

  // Flushes every file under `incoming`, then moves them into place as
  // described above and writes the manifest last. Files the previous manifest
  // listed that the new set lacks are removed. Throws std::runtime_error
  // (disk full, I/O error) before anything visible changed when it can.
  void publish(const std::filesystem::path& incoming, FolderKind kind, const std::string& run_id);

  // Removes what the previous manifest lists but `keep` (the manifest first):
  // a sweep started over with --overwrite keeps nothing, a resumed one keeps
  // its cells.jsonl and sweep.json.
  void remove_previous(const std::vector<std::string>& keep = {});

 private:
  void prepare_publish(const std::filesystem::path& incoming, const std::vector<std::string>& files, FolderKind kind,
                       const std::string& run_id);
  void swap_in(const std::filesystem::path& incoming, std::vector<std::string> files);

  std::filesystem::path path_;
  std::unique_ptr<FileLock> lock_;
  std::optional<Manifest> previous_;
};

// `skewbench report` wrote these files (absolute or relative to the working
// directory) into dir: when dir is a sweep folder with a manifest, they
// replace an earlier report's entries (whose files no longer written are
// removed); the other entries are kept as they were, not re-digested.
void add_report_to_manifest(const std::filesystem::path& dir, const std::vector<std::filesystem::path>& written);

// Every regular file under dir, relative and '/'-separated, sorted; hidden
// bookkeeping (lock, journal, incoming folders) left out.
std::vector<std::string> evidence_files_under(const std::filesystem::path& dir);

}  // namespace skewbench::artifacts
