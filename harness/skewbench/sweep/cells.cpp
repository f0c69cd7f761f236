#include "sweep/cells.hpp"

#include "common/files.hpp"
#include "common/json_reader.hpp"
#include "scenario/verdict.hpp"

#include <stdexcept>
#include <utility>

namespace skewbench::sweep {

using nlohmann::json;

namespace {

// A record whose cell ran to a verdict, rather than ending in ERROR (which a
// resume runs again). Throws when the verdict is not a string.
bool is_kept(const json& record) {
  return record.at("verdict").get<std::string>() != scenario::to_string(scenario::Verdict::Error);
}

}  // namespace

CellWriter::CellWriter(const std::string& path) : path_(path), out_(path, std::ios::trunc) {
  if (!out_) throw std::runtime_error("cannot open " + path + " for writing");
}

CellLine::CellLine(json cell_record)
    : record(std::move(cell_record)), line(record.dump()), core_line(evidence::cell_core_line(record)) {}

void CellWriter::write(const CellLine& cell) {
  out_ << cell.line << '\n';
  // Readers may follow the file while the sweep runs; one write per cell
  // was a tenth of an in-process cell's time.
  if (const auto now = std::chrono::steady_clock::now(); now - flushed_at_ >= kFlushInterval) {
    out_.flush();
    flushed_at_ = now;
  }
  if (!out_) throw std::runtime_error("cannot write " + path_);
  digest_.update(cell.core_line);
  digest_.update("\n");
  tally_.add(cell.record);
  ++written_;
}

std::string CellWriter::finish() {
  out_.close();
  if (!out_) throw std::runtime_error("cannot close " + path_);
  return digest_.hex_digest();
}

PreviousCells::PreviousCells(const std::string& path, std::uint64_t cells_total)
    : path_(path), kept_(cells_total, false) {
  auto scan = open_input_file(path);
  std::string line;
  for (std::uint64_t number = 1; std::getline(scan, line); ++number) {
    // getline stops at the end of the file without a newline only on the last line.
    const bool unterminated = scan.eof();
    json record;
    try {
      record = parse_bounded_json(line);
    } catch (const std::exception& e) {
      if (unterminated) {
        dropped_torn_line_ = number;
        break;
      }
      throw std::runtime_error(path + ":" + std::to_string(number) + ": " + e.what());
    }
    try {
      const auto cell = record.at("cell").get<std::uint64_t>();
      if (cell >= cells_total) throw std::runtime_error("cell " + std::to_string(cell) + " is not in the grid");
      if (is_kept(record) && !kept_[cell]) {
        kept_[cell] = true;
        ++kept_count_;
      }
    } catch (const std::exception& e) {
      throw std::runtime_error(path + ":" + std::to_string(number) + ": " + e.what());
    }
    ++whole_lines_;
  }
  in_ = open_input_file(path);
}

json PreviousCells::take(std::uint64_t cell) {
  std::string line;
  while (lines_taken_ < whole_lines_ && std::getline(in_, line)) {
    ++lines_taken_;
    auto record = parse_bounded_json(line);
    if (record.at("cell").get<std::uint64_t>() == cell && is_kept(record)) return record;
  }
  throw std::runtime_error(path_ + " changed while the sweep resumed: cell " + std::to_string(cell) + " is gone");
}

}  // namespace skewbench::sweep
