#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace skewbench {

// Writes the whole file or nothing: the bytes go to a temporary file in the same
// directory, are flushed to disk, and the temporary is renamed over `path`.
// A reader never sees a half-written artifact. Throws std::runtime_error.
void write_file_atomically(const std::filesystem::path& path, std::string_view bytes);

// Reads a whole file. Throws std::runtime_error naming the path on failure.
std::string read_file(const std::filesystem::path& path);

// A directory created under the system temporary directory and removed with
// everything in it when the object is destroyed (unless keep() was called).
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

// Asks the kernel for a loopback TCP port that is free right now.
int free_loopback_port();

}  // namespace skewbench
