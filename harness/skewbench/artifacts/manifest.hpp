#pragma once

// manifest.json: the list of files skewbench wrote into an evidence folder,
// each with its SHA-256 and size. It is how a folder is recognised as
// skewbench's (so --overwrite removes only what skewbench wrote), and the
// last file a run publishes (so its presence means the evidence is whole).

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/vocabulary.hpp"

namespace skewbench::artifacts {

inline constexpr const char* kManifestFile = "manifest.json";
inline constexpr const char* kManifestSchemaVersion = "skewbench-manifest/1";

// What an evidence folder holds: a run's scenarios, a sweep's cells, or an
// explore's findings.
enum class FolderKind { kRun, kSweep, kExplore };
inline constexpr auto kFolderKinds = vocabulary<FolderKind>(
    {{FolderKind::kRun, "run"}, {FolderKind::kSweep, "sweep"}, {FolderKind::kExplore, "explore"}});
std::string to_string(FolderKind kind);
// "a run", "a sweep", "an explore": a kind of folder as a sentence names it.
std::string with_article(const std::string& kind);

struct ManifestEntry {
  std::string path;  // relative to the folder, '/'-separated
  std::string sha256;
  std::uintmax_t bytes = 0;
};

struct Manifest {
  FolderKind kind = FolderKind::kRun;
  std::string run_id;
  std::vector<ManifestEntry> files;  // sorted by path

  nlohmann::json to_json() const;
  bool lists(const std::string& relative_path) const;
};

// A manifest.json that cannot be read as one.
class ManifestError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// SHA-256 of a file's bytes, read in chunks.
std::string file_sha256(const std::filesystem::path& path);

// Digests the files (paths relative to dir) as they are now.
Manifest make_manifest(const std::filesystem::path& dir, FolderKind kind, const std::string& run_id,
                       std::vector<std::string> relative_paths);

// DIR/manifest.json, or nullopt when there is none. Throws ManifestError
// naming the file when it exists but is not a skewbench manifest.
std::optional<Manifest> read_manifest(const std::filesystem::path& dir);

// Writes DIR/manifest.json atomically and makes its name durable.
void write_manifest(const std::filesystem::path& dir, const Manifest& manifest);

}  // namespace skewbench::artifacts
