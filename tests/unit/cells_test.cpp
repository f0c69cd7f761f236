// cells.jsonl as a resumed sweep reads it (sweep::PreviousCells): the cells
// it keeps, a last line cut short by an interrupted append, and what is
// still an error.

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "common/files.hpp"
#include "sweep/cells.hpp"

using namespace skewbench;
using Catch::Matchers::ContainsSubstring;
using nlohmann::json;

namespace {

std::string line(int cell, const std::string& verdict = "SAFE") {
  return json({{"cell", cell}, {"policy", "p"}, {"policy_name", "node_local"}, {"verdict", verdict}}).dump() + "\n";
}

std::string resume_error(const std::string& path, std::uint64_t cells) {
  try {
    sweep::PreviousCells previous(path, cells);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a last line cut short by an interrupted append is dropped, and its cell runs again") {
  TempDir dir("skewbench-cells");
  const auto path = (dir.path() / "cells.jsonl").string();
  const auto torn = line(2).substr(0, 17);  // what a full disk leaves: no newline
  write_file_atomically(path, line(0) + line(1) + torn);
  sweep::PreviousCells previous(path, 4);
  CHECK(previous.kept_count() == 2);
  CHECK(previous.keeps(0));
  CHECK(previous.keeps(1));
  CHECK_FALSE(previous.keeps(2));
  REQUIRE(previous.dropped_torn_line());
  CHECK(*previous.dropped_torn_line() == 3);
  CHECK(previous.take(0)["cell"] == 0);
  CHECK(previous.take(1)["cell"] == 1);
  // The torn line is never handed out as a record.
  CHECK_THROWS_WITH(previous.take(2), ContainsSubstring("cell 2 is gone"));
}

TEST_CASE("a whole file has no torn line, and an ERROR cell is not kept") {
  TempDir dir("skewbench-cells");
  const auto path = (dir.path() / "cells.jsonl").string();
  write_file_atomically(path, line(0) + line(1, "ERROR"));
  sweep::PreviousCells previous(path, 2);
  CHECK(previous.kept_count() == 1);
  CHECK_FALSE(previous.dropped_torn_line());
}

TEST_CASE("a malformed line that ends in a newline, or is not the last, is still an error naming it") {
  TempDir dir("skewbench-cells");
  const auto path = (dir.path() / "cells.jsonl").string();
  write_file_atomically(path, line(0) + "{\"cell\": 1, \"verd\n" + line(2));
  CHECK_THAT(resume_error(path, 3), ContainsSubstring("cells.jsonl:2: "));
  write_file_atomically(path, line(0) + "{\"cell\": 1, \"verd\n");
  CHECK_THAT(resume_error(path, 3), ContainsSubstring("cells.jsonl:2: "));
  write_file_atomically(path, line(0) + line(7));
  CHECK_THAT(resume_error(path, 3), ContainsSubstring("cells.jsonl:2: cell 7 is not in the grid"));
}
