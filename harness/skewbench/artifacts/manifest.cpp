#include "artifacts/manifest.hpp"

#include <algorithm>
#include <fstream>

#include "common/digest.hpp"
#include "common/files.hpp"
#include "common/json_reader.hpp"

namespace skewbench::artifacts {
namespace fs = std::filesystem;
using nlohmann::json;

std::string to_string(FolderKind kind) { return std::string(kFolderKinds.name(kind)); }

std::string with_article(const std::string& kind) { return (kind.find_first_of("aeiou") == 0 ? "an " : "a ") + kind; }

json Manifest::to_json() const {
  json entries = json::array();
  for (const auto& f : files) entries.push_back({{"path", f.path}, {"sha256", f.sha256}, {"bytes", f.bytes}});
  return {{"schema_version", kManifestSchemaVersion},
          {"kind", "evidence_manifest"},
          {"contents", to_string(kind)},
          {"run_id", run_id},
          {"files", entries}};
}

bool Manifest::lists(const std::string& relative_path) const {
  return std::any_of(files.begin(), files.end(), [&](const auto& f) { return f.path == relative_path; });
}

std::string file_sha256(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  Sha256 digest;
  std::string chunk(1 << 16, '\0');
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    digest.update(std::string_view(chunk.data(), static_cast<std::size_t>(in.gcount())));
  }
  if (in.bad()) throw std::runtime_error("cannot read " + path.string());
  return digest.hex_digest();
}

Manifest make_manifest(const fs::path& dir, FolderKind kind, const std::string& run_id,
                       std::vector<std::string> relative_paths) {
  std::sort(relative_paths.begin(), relative_paths.end());
  relative_paths.erase(std::unique(relative_paths.begin(), relative_paths.end()), relative_paths.end());
  Manifest manifest{.kind = kind, .run_id = run_id, .files = {}};
  for (const auto& relative : relative_paths) {
    const auto path = dir / relative;
    manifest.files.push_back({.path = relative, .sha256 = file_sha256(path), .bytes = fs::file_size(path)});
  }
  return manifest;
}

namespace {

// A listed path must stay inside the folder: --overwrite removes what it names.
Manifest parse_manifest(const json& doc, const std::string& where, const fs::path& dir) {
  if (!doc.is_object() || doc.value("kind", "") != "evidence_manifest") {
    throw ManifestError(where + " is not a skewbench evidence manifest");
  }
  if (doc.value("schema_version", "") != kManifestSchemaVersion) {
    throw ManifestError(where + " has schema_version " + doc.value("schema_version", json("?")).dump() + ", expected " +
                        kManifestSchemaVersion);
  }
  const auto contents = kFolderKinds.parse(doc.value("contents", ""));
  if (!contents) throw ManifestError(where + ": $.contents must be one of " + kFolderKinds.listed());
  Manifest manifest{.kind = *contents, .run_id = doc.value("run_id", ""), .files = {}};
  const auto& files = doc.value("files", json());
  if (!files.is_array()) throw ManifestError(where + ": $.files must be an array");
  for (std::size_t i = 0; i < files.size(); ++i) {
    const auto& f = files[i];
    const auto at = where + ": $.files[" + std::to_string(i) + "]";
    if (!f.is_object() || !f.contains("path") || !f["path"].is_string() || !f.contains("sha256") ||
        !f["sha256"].is_string() || !f.contains("bytes") || !f["bytes"].is_number_unsigned()) {
      throw ManifestError(at + " needs path, sha256 and bytes");
    }
    const auto path = f["path"].get<std::string>();
    if (const auto problem = confined_path_problem(dir, path)) {
      throw ManifestError(at + ".path " + json(path).dump(-1, ' ', false, json::error_handler_t::replace) +
                          " leaves the folder: it " + *problem);
    }
    manifest.files.push_back(
        {.path = path, .sha256 = f["sha256"].get<std::string>(), .bytes = f["bytes"].get<std::uintmax_t>()});
  }
  return manifest;
}

}  // namespace

std::optional<Manifest> read_manifest(const fs::path& dir) {
  const auto path = dir / kManifestFile;
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  json doc;
  try {
    doc = parse_bounded_json(read_file(path));
  } catch (const std::exception& e) {
    throw ManifestError(path.string() + ": " + e.what());
  }
  return parse_manifest(doc, path.string(), dir);
}

void write_manifest(const fs::path& dir, const Manifest& manifest) {
  write_file_atomically(dir / kManifestFile, manifest.to_json().dump(2) + "\n");
  sync_path(dir);
}

}  // namespace skewbench::artifacts
