#pragma once

// skewbench merge: the shards of one sweep, run apart, joined into the sweep
// they slice. Shard I of N holds cells I-1, I-1+N, ...; the merged cells.jsonl
// is in global cell order and its core digest equals the unsharded sweep's.

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace skewbench::sweep {

// Why the shards cannot be merged, naming the folder, file or shard.
class MergeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What a merge wrote.
struct MergedSweep {
  nlohmann::json summary;  // sweep.json as written
  std::uint64_t cells = 0;
  std::string core_digest;
  std::uint64_t errors = 0;  // cells whose verdict is ERROR
};

class ShardMerge {
 public:
  // Reads each DIR/sweep.json and checks that together they are the complete,
  // disjoint shards of one grid and base scenario. Throws MergeError; a
  // sweep.json whose fields are malformed throws nlohmann::json::exception.
  static ShardMerge check(const std::vector<std::string>& shard_dirs);

  std::size_t shard_count() const { return summaries_.size(); }
  // The run id the merged sweep is published under: the first shard's.
  std::string run_id() const;

  // Opens every shard's cells.jsonl; throws MergeError naming one that cannot
  // be read.
  void open_cells();

  // Writes DIR/cells.jsonl and DIR/sweep.json (unsynced: the caller publishes
  // DIR whole). Throws MergeError when a shard ends early or holds a cell out
  // of its place. Needs open_cells() first.
  MergedSweep write(const std::filesystem::path& dir);

 private:
  ShardMerge(std::vector<std::string> dirs, std::vector<nlohmann::json> summaries);
  void check_shard(std::size_t i, std::vector<bool>& seen) const;
  nlohmann::json merged_summary(const MergedSweep& cells, const nlohmann::json& per_policy) const;

  std::vector<std::string> dirs_;
  std::vector<nlohmann::json> summaries_;
  std::uint64_t count_ = 1;            // N, the number of shards the grid was cut into
  std::vector<std::ifstream> inputs_;  // by shard index - 1
};

}  // namespace skewbench::sweep
