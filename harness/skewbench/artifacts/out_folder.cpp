#include "artifacts/out_folder.hpp"

#include <algorithm>
#include <set>

#include <unistd.h>

#include "common/digest.hpp"
#include "common/json_reader.hpp"
#include "evidence/evidence.hpp"

namespace skewbench::artifacts {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The files readers start from: removed first, published last.
bool is_entry_point(const std::string& relative) { return relative == "summary.json" || relative == "sweep.json"; }

fs::path absolute_normal(const fs::path& p) {
  std::error_code ec;
  const auto canonical = fs::weakly_canonical(fs::absolute(p), ec);
  return ec ? fs::absolute(p).lexically_normal() : canonical;
}

// True when `inner` is `outer` or lies inside it.
bool within(const fs::path& inner, const fs::path& outer) {
  const auto rel = inner.lexically_relative(outer);
  return !rel.empty() && *rel.begin() != "..";
}

void check_clear_of_inputs(const fs::path& out, const std::vector<fs::path>& inputs) {
  const auto out_abs = absolute_normal(out);
  for (const auto& input : inputs) {
    const auto in_abs = absolute_normal(input);
    std::string relation;
    if (in_abs == out_abs) {
      relation = "is the input";
    } else if (within(in_abs, out_abs)) {
      relation = "contains the input";
    } else if (within(out_abs, in_abs)) {
      relation = "lies inside the input";
    } else {
      continue;
    }
    throw OutFolderError("--out " + out.string() + " " + relation + " " + input.string() +
                         "; evidence must not be written over or among its inputs: choose another --out");
  }
}

// Any entry other than skewbench's own bookkeeping.
bool holds_anything(const fs::path& dir) {
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (!is_own_hidden_name(entry.path().filename().string())) return true;
  }
  return false;
}

// Throws OutFolderError naming the first path of `relative` that could reach
// outside root (see confined_path_problem), so nothing is removed at all.
void require_confined(const fs::path& root, const std::vector<std::string>& relative, const std::string& source) {
  for (const auto& r : relative) {
    if (const auto problem = confined_path_problem(root, r)) {
      throw OutFolderError(source + " names " + json(r).dump(-1, ' ', false, json::error_handler_t::replace) +
                           ", which " + *problem + ": it would reach outside " + root.string() +
                           "; nothing was removed: remove the folder by hand");
    }
  }
}

// Removes each listed file, then the folders they leave empty (never the root).
// Every path is checked to stay inside root before the first removal.
void remove_listed(const fs::path& root, std::vector<std::string> relative) {
  require_confined(root, relative, "the list of files to remove");
  std::stable_partition(relative.begin(), relative.end(), is_entry_point);
  std::set<fs::path, std::greater<>> parents;
  for (const auto& r : relative) {
    fs::remove(root / r);
    // Relative and without "..", so the walk ends at an empty path.
    for (auto p = fs::path(r).parent_path(); !p.empty() && p != p.parent_path(); p = p.parent_path()) {
      parents.insert(root / p);
    }
  }
  for (const auto& dir : parents) {
    std::error_code ec;
    if (fs::is_directory(dir, ec) && fs::is_empty(dir, ec)) fs::remove(dir, ec);
  }
}

// A run killed while publishing leaves its journal: the files it names are
// skewbench's, whichever run wrote them.
// Returns true when it did: the folder is skewbench's, though it holds no manifest.
bool recover_interrupted_publish(const fs::path& dir, bool overwrite) {
  const auto journal_path = dir / kJournalFile;
  if (!fs::exists(journal_path)) return false;
  if (!overwrite) {
    throw OutFolderError("an earlier write into " + dir.string() + " was interrupted (" + journal_path.string() +
                         " remains); pass --overwrite to replace what it left");
  }
  std::vector<std::string> files;
  try {
    const auto journal = parse_bounded_json(read_file(journal_path));
    for (const auto& f : journal.at("files")) files.push_back(f.get<std::string>());
  } catch (const std::exception& e) {
    throw OutFolderError(journal_path.string() + " is malformed (" + e.what() + "); remove the folder by hand");
  }
  require_confined(dir, files, journal_path.string());
  fs::remove(dir / kManifestFile);
  remove_listed(dir, files);
  fs::remove(journal_path);
  return true;
}

void remove_stale_incoming(const fs::path& dir) {
  std::vector<fs::path> stale;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().filename().string().rfind(kIncomingPrefix, 0) == 0) stale.push_back(entry.path());
  }
  for (const auto& p : stale) fs::remove_all(p);
}

// Create, write, flush, rename and remove a file: what publishing needs.
void probe_writable(const fs::path& dir) {
  const auto probe = dir / (std::string(kOwnHiddenPrefix) + "-probe-" + std::to_string(::getpid()));
  const auto renamed = fs::path(probe.string() + ".renamed");
  try {
    write_file_unsynced(probe, "probe\n");
    sync_path(probe);
    fs::rename(probe, renamed);
    fs::remove(renamed);
  } catch (const std::exception& e) {
    std::error_code ec;
    fs::remove(probe, ec);
    fs::remove(renamed, ec);
    throw OutFolderError("cannot write into --out " + dir.string() + ": " + e.what());
  }
}

std::string holder_line(const std::string& command) {
  return "pid " + std::to_string(::getpid()) + " (skewbench " + command + ", since " + evidence::utc_now_iso8601() +
         ")";
}

}  // namespace

void add_report_to_manifest(const fs::path& dir, const std::vector<fs::path>& written) {
  auto manifest = read_manifest(dir);
  if (!manifest || manifest->kind != FolderKind::kSweep) return;
  std::vector<std::string> fresh;
  for (const auto& w : written)
    fresh.push_back(absolute_normal(w).lexically_relative(absolute_normal(dir)).generic_string());
  auto is_report = [](const std::string& p) { return p == "report.html" || p.rfind("maps/", 0) == 0; };
  std::vector<std::string> stale;
  std::vector<ManifestEntry> entries;
  for (const auto& f : manifest->files) {
    if (!is_report(f.path)) {
      entries.push_back(f);
    } else if (std::find(fresh.begin(), fresh.end(), f.path) == fresh.end()) {
      stale.push_back(f.path);
    }
  }
  const auto digested = make_manifest(dir, manifest->kind, manifest->run_id, fresh);
  entries.insert(entries.end(), digested.files.begin(), digested.files.end());
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
  manifest->files = entries;
  write_manifest(dir, *manifest);
  remove_listed(dir, stale);
}

bool is_own_hidden_name(const std::string& name) { return name.rfind(kOwnHiddenPrefix, 0) == 0; }

std::vector<std::string> evidence_files_under(const fs::path& dir) {
  std::vector<std::string> out;
  for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator(); ++it) {
    if (it.depth() == 0 && is_own_hidden_name(it->path().filename().string())) {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (!it->is_directory()) out.push_back(it->path().lexically_relative(dir).generic_string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

OutFolder::OutFolder(const OutFolderRequest& request) : path_(request.path) {
  check_clear_of_inputs(path_, request.inputs);
  std::error_code ec;
  const bool existed = fs::exists(path_, ec);
  if (existed && !fs::is_directory(path_, ec)) throw OutFolderError("--out " + path_.string() + " is not a folder");
  if (!existed && !fs::create_directories(path_, ec) && ec) {
    throw OutFolderError("cannot create --out " + path_.string() + ": " + ec.message());
  }
  try {
    try {
      lock_ = std::make_unique<FileLock>(path_ / kLockFile, holder_line(request.command));
    } catch (const std::exception& e) {
      throw OutFolderError("cannot write into --out " + path_.string() + ": " + e.what());
    }
    if (!lock_->held()) {
      throw OutFolderError("--out " + path_.string() + " is in use by " + lock_->holder() +
                           "; wait for it or choose another --out");
    }
    const bool recovered = recover_interrupted_publish(path_, request.overwrite);
    remove_stale_incoming(path_);
    try {
      previous_ = read_manifest(path_);
    } catch (const ManifestError& e) {
      throw OutFolderError(std::string(e.what()) + "; remove the folder by hand or choose another --out");
    }
    const auto what = to_string(request.kind);
    if (previous_ && previous_->kind != request.kind) {
      throw OutFolderError("--out " + path_.string() + " holds " + with_article(to_string(previous_->kind)) +
                           "'s evidence; " + with_article(what) + " cannot be written there: choose another --out");
    }
    if (!previous_ && request.resume) {
      throw OutFolderError("nothing to resume in " + path_.string() + ": it holds no " + kManifestFile);
    }
    if (!previous_ && !recovered && holds_anything(path_)) {
      throw OutFolderError("--out " + path_.string() + " is not empty and holds no " + kManifestFile +
                           ", so skewbench did not write it; --overwrite removes only files a manifest lists: " +
                           "choose an empty or new folder");
    }
    if (previous_ && !request.overwrite && !request.resume) {
      throw OutFolderError("--out " + path_.string() + " already holds " + with_article(what) +
                           "'s evidence; choose another --out or pass --overwrite");
    }
    probe_writable(path_);
  } catch (...) {
    // A folder this call created is left as it was found: absent. The lock
    // file goes only when this process holds it: one that lost the race for
    // a new folder must not remove the file the winner holds, and the folder
    // itself is removed only when empty.
    if (!existed) {
      const bool held = lock_ && lock_->held();
      lock_.reset();
      if (held) fs::remove(path_ / kLockFile, ec);
      fs::remove(path_, ec);
    }
    throw;
  }
}

fs::path OutFolder::make_incoming(const std::string& run_id) const {
  const auto incoming = path_ / (std::string(kIncomingPrefix) + run_id);
  fs::remove_all(incoming);
  fs::create_directories(incoming);
  return incoming;
}

void OutFolder::publish(const fs::path& incoming, FolderKind kind, const std::string& run_id) {
  auto files = evidence_files_under(incoming);
  std::erase(files, std::string(kManifestFile));
  for (const auto& f : files) {
    std::error_code ec;
    if (fs::exists(path_ / f, ec) && !(previous_ && previous_->lists(f))) {
      throw std::runtime_error("would replace " + (path_ / f).string() + ", which no manifest lists");
    }
  }
  try {
    prepare_publish(incoming, files, kind, run_id);
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string(e.what()) + "; the folder's earlier contents are unchanged");
  }
  try {
    swap_in(incoming, files);
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string(e.what()) + " while replacing the earlier evidence; " + path_.string() +
                             " holds no manifest now: run again with --overwrite");
  }
  fs::remove_all(incoming);
  previous_ = read_manifest(path_);
}

// Everything that needs space or can fail is done before the old evidence is
// touched: the files, the manifest, the journal and their flush, in one round.
// The incoming folder's own entries need no flush: every file leaves it by a
// rename, which the flush of its destination folder makes durable.
void OutFolder::prepare_publish(const fs::path& incoming, const std::vector<std::string>& files, FolderKind kind,
                                const std::string& run_id) {
  // Unflushed here: the one round below flushes it with the rest.
  write_file_unsynced(incoming / kManifestFile, make_manifest(incoming, kind, run_id, files).to_json().dump(2) + "\n");
  json journal_files = json::array();
  for (const auto& f : files) journal_files.push_back(f);
  if (previous_) {
    for (const auto& f : previous_->files) journal_files.push_back(f.path);
  }
  const auto journal_draft = path_ / (std::string(kJournalFile) + ".draft");
  try {
    write_file_unsynced(journal_draft, json({{"files", journal_files}}).dump() + "\n");
    std::vector<fs::path> to_flush = {journal_draft, incoming / kManifestFile};
    for (const auto& f : files) to_flush.push_back(incoming / f);
    sync_paths(to_flush);
  } catch (...) {
    std::error_code ignored;
    fs::remove(journal_draft, ignored);
    throw;
  }
  fs::rename(journal_draft, path_ / kJournalFile);
  sync_path(path_);
}

// Out with the old (manifest and summary first), in with the new (summary
// and manifest last); only renames and removals, which need no space.
void OutFolder::swap_in(const fs::path& incoming, std::vector<std::string> files) {
  fs::remove(path_ / kManifestFile);
  if (previous_) {
    std::vector<std::string> old;
    for (const auto& f : previous_->files) old.push_back(f.path);
    remove_listed(path_, old);
  }
  std::stable_partition(files.begin(), files.end(), [](const auto& f) { return !is_entry_point(f); });
  std::set<fs::path> touched = {path_};
  for (const auto& f : files) {
    fs::create_directories((path_ / f).parent_path());
    fs::rename(incoming / f, path_ / f);
    touched.insert((path_ / f).parent_path());
  }
  sync_paths({touched.begin(), touched.end()});
  fs::rename(incoming / kManifestFile, path_ / kManifestFile);
  fs::remove(path_ / kJournalFile);
  sync_path(path_);
}

void OutFolder::remove_previous(const std::vector<std::string>& keep) {
  if (!previous_) return;
  json journal_files = json::array();
  std::vector<std::string> removed;
  std::vector<std::string> kept;
  for (const auto& f : previous_->files) {
    const bool keeps = std::find(keep.begin(), keep.end(), f.path) != keep.end();
    (keeps ? kept : removed).push_back(f.path);
    if (!keeps) journal_files.push_back(f.path);
  }
  write_file_atomically(path_ / kJournalFile, json({{"files", journal_files}}).dump() + "\n");
  fs::remove(path_ / kManifestFile);
  sync_path(path_);
  remove_listed(path_, removed);
  if (kept.empty()) {
    previous_.reset();
  } else {
    // Still skewbench's folder: a resumed sweep killed now can be resumed again.
    previous_ = make_manifest(path_, previous_->kind, previous_->run_id, kept);
    write_manifest(path_, *previous_);
  }
  fs::remove(path_ / kJournalFile);
  sync_path(path_);
}

}  // namespace skewbench::artifacts
