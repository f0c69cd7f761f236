#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace skewbench {

// Writes the whole file or nothing: the bytes go to a temporary file in the same
// directory, are flushed to disk, and the temporary is renamed over `path`.
// A reader never sees a half-written artifact. Throws std::runtime_error.
void write_file_atomically(const std::filesystem::path& path, std::string_view bytes);

// Writes the bytes to `path` (created or truncated) without flushing them to
// disk: for a batch of files that are flushed together with sync_path() and
// then published by a rename. Throws std::runtime_error naming the path and
// the system's reason (e.g. "No space left on device").
void write_file_unsynced(const std::filesystem::path& path, std::string_view bytes);

// fsync() of a file or a directory (a directory's fsync makes the names
// created, renamed or removed in it durable). Throws std::runtime_error.
void sync_path(const std::filesystem::path& path);

// fsync() of every path, in one round: writeback of all of them is started
// first, so the fsyncs that follow wait for writes already under way instead of
// each starting its own (and on a journaling file system one journal commit
// can cover them all). Throws std::runtime_error naming the path that failed.
void sync_paths(const std::vector<std::filesystem::path>& paths);

// An exclusive advisory lock (flock) on `path`, created if missing, held until
// the object is destroyed or the process ends (the kernel drops it even on
// SIGKILL). The file holds a line naming the holder, so a refused process can
// say who holds it.
class FileLock {
 public:
  // When another process holds the lock, nothing is held: check held().
  FileLock(const std::filesystem::path& path, std::string_view holder_description);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  bool held() const { return fd_ >= 0; }
  // What the holder wrote into the file (when held() is false).
  const std::string& holder() const { return holder_; }

 private:
  int fd_ = -1;
  std::string holder_;
};

// Why `relative`, a path read from a file inside the folder `root` (a
// manifest entry, a publish journal), must not be used to remove, write or
// read something there; nullopt when it may. Such files come from CI
// artifacts and shared disks, so their names are hostile until checked: the
// path must be relative and '/'-separated, with no empty, "." or ".." part,
// no control character (NUL included), at most kMaxConfinedPathBytes bytes
// and kMaxPathPartBytes per part, and every part before the last that exists
// must be a real folder, not a symbolic link. A last part that is a symbolic
// link is allowed: removing it removes the link, not what it points to.
std::optional<std::string> confined_path_problem(const std::filesystem::path& root, std::string_view relative);
inline constexpr std::size_t kMaxConfinedPathBytes = 4096;
inline constexpr std::size_t kMaxPathPartBytes = 255;

// The one rule for the files skewbench reads (scenarios, grids, targets,
// tables, and every file of an evidence folder given to verify, compare,
// report or merge): a regular file, and not through a symbolic link. A FIFO
// would hang the reader, a device such as /dev/zero would be read without
// end, and a link can carry a read outside the folder that was given; each
// is refused before it is opened, naming the path and what it is.
inline constexpr std::uintmax_t kMaxInputFileBytes = std::uintmax_t{256} << 20;

// A file that breaks the rule above: the command refuses its input (exit 2
// where the input is the user's; verify names it as a problem of the folder).
class InputFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What `path` is when it is not a regular file ("is a FIFO", "is a symbolic
// link to /dev/zero", "does not exist"), or nullopt when it is one. Only the
// last part is judged: the folders on the way may be links.
std::optional<std::string> input_file_problem(const std::filesystem::path& path);

// Reads a whole regular file of at most `max_bytes`. Throws InputFileError
// naming the path when input_file_problem() has one or the file is larger,
// std::runtime_error naming it when it cannot be read. The file is opened
// without following a link and without blocking, so a file swapped for a
// link or a FIFO after the check is refused too.
std::string read_file(const std::filesystem::path& path, std::uintmax_t max_bytes = kMaxInputFileBytes);

// What a log holds from byte `offset` on, at most its last `max_bytes`, with
// "..." in front when cut. Throws std::runtime_error naming the log when it
// cannot be read.
std::string read_log_since(const std::filesystem::path& path, std::uintmax_t offset, std::uintmax_t max_bytes);

// Opens a regular file to be read line by line (cells.jsonl, which has no
// size limit). Throws InputFileError as read_file does.
std::ifstream open_input_file(const std::filesystem::path& path);

// Why `relative` (a '/'-separated path skewbench is about to write inside the
// folder `root`) must not be written: a folder on the way is a symbolic link
// or not a folder, or the file itself exists and is not a regular file (a
// link, a FIFO, a folder). nullopt when it may be written.
std::optional<std::string> output_path_problem(const std::filesystem::path& root, std::string_view relative);

// The first executable file named `program` in a folder of $PATH (an empty
// entry is the current folder), or nullopt.
std::optional<std::filesystem::path> find_on_path(const std::string& program);

// A directory created under the system temporary directory ($TMPDIR, else
// /tmp) and removed with everything in it when the object is destroyed
// (unless keep() was called). A process killed with SIGKILL cannot remove its
// own directories, so each one holds a file naming its owner (pid, the
// process's start time, which tells a reused pid apart, and its pid
// namespace), and every new TempDir first removes the skewbench-* directories
// whose owner is gone. Only an owner of the same pid namespace is judged: a
// pid read in a container or under `unshare --pid` names another process.
class TempDir {
 public:
  explicit TempDir(std::string_view prefix);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  void keep() { keep_ = true; }

 private:
  std::filesystem::path path_;
  bool keep_ = false;
};

// The name of the owner file inside every TempDir.
inline constexpr const char* kTempDirOwnerFile = ".skewbench-owner";

// Removes the directories directly under `base` named skewbench-* whose owner
// file names a process that no longer runs. Returns how many were removed.
int remove_orphaned_temp_dirs(const std::filesystem::path& base);

}  // namespace skewbench
