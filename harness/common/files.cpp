#include "common/files.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/process_tree.hpp"

namespace skewbench {
namespace {

std::runtime_error errno_error(const std::string& what, const std::filesystem::path& path) {
  return std::runtime_error(what + " " + path.string() + ": " + std::strerror(errno));
}

// Writes every byte, again after a signal interrupts; false (errno set) on an
// error, which the caller reports naming its path.
bool write_all(int fd, std::string_view bytes) {
  std::size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    written += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

void write_file_atomically(const std::filesystem::path& path, std::string_view bytes) {
  const auto dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  std::filesystem::create_directories(dir);
  std::string tmpl = (dir / ("." + path.filename().string() + ".tmp-XXXXXX")).string();
  const int fd = ::mkstemp(tmpl.data());
  if (fd < 0) throw errno_error("cannot create a temporary file for", path);
  if (!write_all(fd, bytes)) {
    const auto err = errno_error("cannot write", path);
    ::close(fd);
    ::unlink(tmpl.c_str());
    throw err;
  }
  ::fchmod(fd, 0644);
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const auto err = errno_error("cannot flush", path);
    ::unlink(tmpl.c_str());
    throw err;
  }
  if (::rename(tmpl.c_str(), path.c_str()) != 0) {
    const auto err = errno_error("cannot rename a temporary file onto", path);
    ::unlink(tmpl.c_str());
    throw err;
  }
}

void write_file_unsynced(const std::filesystem::path& path, std::string_view bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw errno_error("cannot create", path);
  if (!write_all(fd, bytes)) {
    const auto err = errno_error("cannot write", path);
    ::close(fd);
    throw err;
  }
  if (::close(fd) != 0) throw errno_error("cannot write", path);
}

void sync_path(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw errno_error("cannot open", path);
  if (::fsync(fd) != 0) {
    const auto err = errno_error("cannot flush", path);
    ::close(fd);
    throw err;
  }
  ::close(fd);
}

void sync_paths(const std::vector<std::filesystem::path>& paths) {
  std::vector<int> fds;
  struct CloseAll {
    std::vector<int>& fds;
    ~CloseAll() {
      for (const int fd : fds) ::close(fd);
    }
  } close_all{fds};
  for (const auto& path : paths) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw errno_error("cannot open", path);
    fds.push_back(fd);
    // Only a hint: where it is not supported the fsync below does the work.
    ::sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
  }
  for (std::size_t i = 0; i < fds.size(); ++i) {
    if (::fsync(fds[i]) != 0) throw errno_error("cannot flush", paths[i]);
  }
}

FileLock::FileLock(const std::filesystem::path& path, std::string_view holder_description) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw errno_error("cannot create the lock file", path);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd);
    if (err != EWOULDBLOCK) {
      errno = err;
      throw errno_error("cannot lock", path);
    }
    // The holder writes its line right after it locks: a process that lost
    // a race by a moment waits a little for it, so the refusal can name it.
    for (int attempt = 0; attempt < 50 && holder_.empty(); ++attempt) {
      if (attempt > 0) ::usleep(2000);
      try {
        holder_ = read_file(path);
      } catch (const std::exception&) {
        break;
      }
      while (!holder_.empty() && (holder_.back() == '\n' || holder_.back() == ' ')) holder_.pop_back();
    }
    if (holder_.empty()) holder_ = "another process";
    return;
  }
  // Only the holder writes the file, so its words are never torn.
  const std::string line = std::string(holder_description) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, line.data(), line.size(), 0) < 0) {
    const auto err = errno_error("cannot write the lock file", path);
    ::close(fd);
    throw err;
  }
  fd_ = fd;
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);
}

namespace {

// The checks that need no disk: see confined_path_problem.
std::optional<std::string> lexical_path_problem(std::string_view relative) {
  if (relative.empty()) return "is empty";
  if (relative.size() > kMaxConfinedPathBytes) {
    return "is " + std::to_string(relative.size()) + " bytes long, more than " + std::to_string(kMaxConfinedPathBytes);
  }
  if (relative.front() == '/') return "is absolute";
  for (const char c : relative) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return "holds a control character";
  }
  std::size_t start = 0;
  for (;;) {
    const auto end = relative.find('/', start);
    const auto part = relative.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (part.empty()) return "has an empty part (\"//\" or a trailing \"/\")";
    if (part == "." || part == "..") return "has a \"" + std::string(part) + "\" part";
    if (part.size() > kMaxPathPartBytes)
      return "has a part longer than " + std::to_string(kMaxPathPartBytes) + " bytes";
    if (end == std::string_view::npos) return std::nullopt;
    start = end + 1;
  }
}

}  // namespace

std::optional<std::string> confined_path_problem(const std::filesystem::path& root, std::string_view relative) {
  if (auto problem = lexical_path_problem(relative)) return problem;
  // Every folder on the way must be a real one inside root: a symbolic link
  // there would carry a removal outside.
  auto at = root;
  std::size_t start = 0;
  for (auto end = relative.find('/'); end != std::string_view::npos; end = relative.find('/', start)) {
    at /= std::string(relative.substr(start, end - start));
    struct stat st {};
    if (::lstat(at.c_str(), &st) != 0) return std::nullopt;  // absent: nothing below it to touch
    if (S_ISLNK(st.st_mode)) return "passes through the symbolic link " + at.string();
    if (!S_ISDIR(st.st_mode)) return "passes through " + at.string() + ", which is not a folder";
    start = end + 1;
  }
  return std::nullopt;
}

namespace {

// What a file that is not a regular one is, for a message.
std::string not_regular(mode_t mode) {
  const char* what = S_ISFIFO(mode)   ? "a FIFO"
                     : S_ISCHR(mode)  ? "a character device"
                     : S_ISBLK(mode)  ? "a block device"
                     : S_ISSOCK(mode) ? "a socket"
                     : S_ISDIR(mode)  ? "a folder"
                                      : "not a file";
  return std::string("is ") + what + ", not a regular file";
}

constexpr const char* kAbsent = "does not exist";

InputFileError input_error(const std::filesystem::path& path, const std::string& problem) {
  return InputFileError(path.string() + " " + problem);
}

}  // namespace

std::optional<std::string> input_file_problem(const std::filesystem::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    return errno == ENOENT ? std::string(kAbsent) : std::string("cannot be examined: ") + std::strerror(errno);
  }
  if (S_ISLNK(st.st_mode)) {
    std::error_code ec;
    const auto to = std::filesystem::read_symlink(path, ec);
    return "is a symbolic link" + (ec ? std::string() : " to " + to.string()) +
           "; skewbench reads regular files only, never through a link";
  }
  if (!S_ISREG(st.st_mode)) return not_regular(st.st_mode);
  return std::nullopt;
}

namespace {

// Throws what input_file_problem() finds; a missing file is named as the
// system names it.
void require_input_file(const std::filesystem::path& path) {
  auto problem = input_file_problem(path);
  if (!problem) return;
  if (*problem == kAbsent) throw InputFileError("cannot open " + path.string() + ": " + std::strerror(ENOENT));
  throw input_error(path, *problem);
}

}  // namespace

std::string read_file(const std::filesystem::path& path, std::uintmax_t max_bytes) {
  require_input_file(path);
  // O_NOFOLLOW and O_NONBLOCK: a link or a FIFO put in its place since the
  // check above fails or returns at once instead of hanging.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) throw errno_error("cannot open", path);
  struct CloseOnExit {
    int fd;
    ~CloseOnExit() { ::close(fd); }
  } close_on_exit{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw errno_error("cannot examine", path);
  if (!S_ISREG(st.st_mode)) throw input_error(path, not_regular(st.st_mode));
  const auto too_large = [&] {
    return input_error(path, "is larger than " + std::to_string(max_bytes) + " bytes, the most skewbench reads of it");
  };
  if (static_cast<std::uintmax_t>(st.st_size) > max_bytes) throw too_large();
  std::string text;
  text.reserve(static_cast<std::size_t>(st.st_size));
  std::string chunk(std::size_t{1} << 16, '\0');
  for (;;) {
    const ssize_t n = ::read(fd, chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw errno_error("cannot read", path);
    if (n == 0) break;
    if (text.size() + static_cast<std::size_t>(n) > max_bytes) throw too_large();  // it grew since fstat
    text.append(chunk.data(), static_cast<std::size_t>(n));
  }
  return text;
}

std::string read_log_since(const std::filesystem::path& path, std::uintmax_t offset, std::uintmax_t max_bytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw std::runtime_error("cannot read the log " + path.string());
  const auto size = static_cast<std::uintmax_t>(in.tellg());
  const auto from = std::max(offset, size > max_bytes ? size - max_bytes : 0);
  if (from >= size) return {};
  in.seekg(static_cast<std::streamoff>(from));
  std::string text(static_cast<std::size_t>(size - from), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  return from > offset ? "..." + text : text;
}

std::ifstream open_input_file(const std::filesystem::path& path) {
  require_input_file(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw errno_error("cannot open", path);
  return in;
}

std::optional<std::string> output_path_problem(const std::filesystem::path& root, std::string_view relative) {
  if (auto problem = confined_path_problem(root, relative)) return std::string(relative) + " " + *problem;
  const auto path = root / std::string(relative);
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return std::nullopt;  // absent: it is created
  if (S_ISLNK(st.st_mode)) return path.string() + " is a symbolic link; skewbench never writes through a link";
  if (!S_ISREG(st.st_mode)) return path.string() + " " + not_regular(st.st_mode);
  return std::nullopt;
}

namespace {

std::filesystem::path temp_base() {
  const char* base = std::getenv("TMPDIR");
  return base && *base ? base : "/tmp";
}

// Field 22 of /proc/PID/stat: when the process started, in clock ticks since
// boot. Empty when there is no such process.
std::string process_start_time(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!in || !std::getline(in, stat)) return "";
  const auto close_paren = stat.rfind(')');  // the command name may hold spaces and parentheses
  if (close_paren == std::string::npos) return "";
  std::istringstream fields(stat.substr(close_paren + 2));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
    if (i == 22) return field;
  }
  return "";
}

// This process's pid namespace ("pid:[4026531836]"); empty when /proc cannot
// say (it is another namespace's /proc).
std::string own_pid_namespace() {
  if (!process_tree::proc_is_own_namespace()) return "";
  std::error_code ec;
  const auto ns = std::filesystem::read_symlink("/proc/self/ns/pid", ec);
  return ec ? "" : ns.string();
}

// True when the owner file names a process that is gone (or a reused pid). A
// pid is only judged in the pid namespace it was written in: a process in
// another one (a container, `unshare --pid`) sees other pids.
bool owner_is_gone(const std::filesystem::path& owner_file) {
  std::ifstream in(owner_file);
  long pid = 0;
  std::string started;
  std::string ns;
  if (!(in >> pid >> started >> ns) || pid <= 0) return false;  // not ours to judge
  if (ns.empty() || ns != own_pid_namespace()) return false;
  return process_start_time(static_cast<pid_t>(pid)) != started;
}

}  // namespace

int remove_orphaned_temp_dirs(const std::filesystem::path& base) {
  int removed = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(base, ec)) {
    if (entry.path().filename().string().rfind("skewbench-", 0) != 0) continue;
    std::error_code entry_ec;
    if (!entry.is_directory(entry_ec) || entry.is_symlink(entry_ec)) continue;
    if (!owner_is_gone(entry.path() / kTempDirOwnerFile)) continue;
    if (std::filesystem::remove_all(entry.path(), entry_ec) > 0 && !entry_ec) ++removed;
  }
  return removed;
}

TempDir::TempDir(std::string_view prefix) {
  const auto base = temp_base();
  remove_orphaned_temp_dirs(base);
  std::string tmpl = (base / (std::string(prefix) + "-XXXXXX")).string();
  if (::mkdtemp(tmpl.data()) == nullptr) throw errno_error("cannot create temporary directory", tmpl);
  path_ = tmpl;
  const auto self = ::getpid();
  write_file_atomically(path_ / kTempDirOwnerFile,
                        std::to_string(self) + " " + process_start_time(self) + " " + own_pid_namespace() + "\n");
}

TempDir::~TempDir() {
  if (keep_) return;
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::optional<std::filesystem::path> find_on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return std::nullopt;
  const std::string_view entries = path;
  std::size_t start = 0;
  while (start <= entries.size()) {
    const auto end = entries.find(':', start);
    const auto dir = entries.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    const auto candidate = std::filesystem::path(dir.empty() ? std::string(".") : std::string(dir)) / program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return std::nullopt;
}

}  // namespace skewbench
