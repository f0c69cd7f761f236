#pragma once

// cells.jsonl: one JSON object per line, one line per cell, in cell-index
// order, written as the sweep runs and read back when it resumes. What a
// cell's core line is, and the per-policy tally, are defined with the rest of
// the evidence (evidence/cell_core.hpp).

#include <chrono>
#include <cstdint>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/digest.hpp"
#include "evidence/cell_core.hpp"

namespace skewbench::sweep {

// Appends records to cells.jsonl in order and keeps the running digest and
// tally; holds nothing else, so memory stays flat in the number of cells.
// Written lines reach the file at most kFlushInterval after they are written
// (a reader following the file sees them), and all of them by finish().
// A record made ready to write: its line and its core line. A sweep's workers
// make them, so that the writer, which takes one cell at a time in order, only
// appends and hashes.
struct CellLine {
  explicit CellLine(nlohmann::json cell_record);
  nlohmann::json record;
  std::string line;       // as cells.jsonl holds it, without the newline
  std::string core_line;  // evidence::cell_core_line of the record
};

class CellWriter {
 public:
  explicit CellWriter(const std::string& path);
  void write(const nlohmann::json& record) { write(CellLine(record)); }
  void write(const CellLine& cell);
  std::string finish();  // closes the file and returns the core digest
  std::uint64_t written() const { return written_; }
  static constexpr std::chrono::milliseconds kFlushInterval{100};
  const evidence::VerdictTally& tally() const { return tally_; }

 private:
  std::string path_;
  std::ofstream out_;
  std::chrono::steady_clock::time_point flushed_at_ = std::chrono::steady_clock::now();
  Sha256 digest_;
  evidence::VerdictTally tally_;
  std::uint64_t written_ = 0;
};

// The cells a sweep to be resumed already finished: its cells.jsonl, read
// forward in cell order. Cells that ended in ERROR are not kept, so a resumed
// sweep runs them again.
class PreviousCells {
 public:
  // Reads the file once to note which cells it holds (one bit per cell of the
  // grid); throws std::runtime_error naming the file and line when malformed.
  // A last line with no newline that is not a whole record is what an append
  // cut short leaves (a full disk, a kill): it is dropped, and its cell runs
  // again. Any other malformed line is an error.
  PreviousCells(const std::string& path, std::uint64_t cells_total);
  bool keeps(std::uint64_t cell) const { return cell < kept_.size() && kept_[cell]; }
  std::uint64_t kept_count() const { return kept_count_; }
  // The line number of a torn last line that was dropped, if any.
  std::optional<std::uint64_t> dropped_torn_line() const { return dropped_torn_line_; }
  // The record of a kept cell; cells must be asked for in increasing order.
  nlohmann::json take(std::uint64_t cell);

 private:
  std::string path_;
  std::vector<bool> kept_;
  std::uint64_t kept_count_ = 0;
  std::uint64_t whole_lines_ = 0;  // lines take() may read
  std::uint64_t lines_taken_ = 0;
  std::optional<std::uint64_t> dropped_torn_line_;
  std::ifstream in_;
};

}  // namespace skewbench::sweep
