// The grid parser (sweep::Grid::parse) and --shard (sweep::Shard::parse) on
// bad input: each error names the JSON path, or the flag, and what is wrong.
// The end-to-end path (exit 2, the message on stderr) is in
// integration/sweep_test.cpp.

#include <cstdint>
#include <functional>

#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "common/json_reader.hpp"
#include "support/sweep_fixture.hpp"
#include "sweep/grid.hpp"
#include "sweep/sweep_runner.hpp"

using namespace skewbench;
using Catch::Matchers::ContainsSubstring;
using nlohmann::json;

namespace {

// Two policies, two axes (the second only for uncertainty): a valid grid.
json small_grid() { return testing::small_grid_document(); }

// "PATH: MESSAGE" of the error parsing the document throws; "" when none.
std::string parse_error(const json& document) {
  try {
    sweep::Grid::parse(document, "grid.json", SKEWBENCH_SOURCE_DIR);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

struct BadGrid {
  std::string name;
  std::function<void(json&)> edit;
  std::string error;  // a part of the message
};

}  // namespace

TEST_CASE("the small grid of these tests is valid and has 3 + 3 x 2 cells") {
  CHECK(parse_error(small_grid()).empty());
  CHECK(sweep::Grid::parse(small_grid(), "grid.json", SKEWBENCH_SOURCE_DIR).cell_count() == 9);
}

TEST_CASE("a malformed grid is refused naming the JSON path and what is wrong") {
  const auto c = GENERATE(values<BadGrid>({
      {"values that are not an array", [](json& g) { g["axes"][0]["values"] = "0,10"; },
       "$.axes[0].values: expected a non-empty array"},
      {"a pointer to a field the scenario lacks", [](json& g) { g["axes"][0]["pointer"] = "/nodes/1/clock_ofset_s"; },
       "clock_ofset_s"},
      {"a policy parameter out of range", [](json& g) { g["policies"][1]["policy"]["max_clock_error_s"] = -3; },
       "$.policies[1].policy.max_clock_error_s"},
      {"a bad value in the middle of an axis",
       [](json& g) {
         g["axes"][1] = {{"name", "recovery_at_s"}, {"pointer", "/steps/2/at_s"}, {"values", {10, -5, 30}}};
       },
       "$.axes[1].values[1]: with policy"},
      {"an axis scoped to a policy the grid lacks", [](json& g) { g["axes"][1]["policies"] = {"uncertainy"}; },
       "$.axes[1].policies[0]: no policy in $.policies is named \"uncertainy\""},
      {"an unknown key", [](json& g) { g["axis"] = g["axes"]; }, "$.axis"},
      {"no policy", [](json& g) { g["policies"] = json::array(); }, "$.policies: must list at least one policy"},
      {"a policy label used twice",
       [](json& g) {
         g["policies"][1]["policy"] = {{"name", "node_local"}};
       },
       "$.policies[1]: policy label \"node_local\" is used twice"},
      {"an axis name used twice", [](json& g) { g["axes"][1]["name"] = "node_b_offset_s"; },
       "$.axes[1].name: axis name used twice"},
      {"a pointer that is not a JSON Pointer", [](json& g) { g["axes"][0]["pointer"] = "nodes/1"; },
       "$.axes[0].pointer: \"nodes/1\" is not a JSON Pointer"},
      {"a pointer to the expectations", [](json& g) { g["axes"][0]["pointer"] = "/expect/effect_count"; },
       "$.axes[0].pointer: a sweep cannot vary the id or the expectations"},
      {"both values and a range",
       [](json& g) {
         g["axes"][0]["range"] = {{"from", 0}, {"to", 2}, {"step", 1}};
       },
       "$.axes[0]: give exactly one of \"values\" or \"range\""},
      {"a range that steps by zero",
       [](json& g) {
         g["axes"][0].erase("values");
         g["axes"][0]["range"] = {{"from", 0}, {"to", 2}, {"step", 0}};
       },
       "$.axes[0].range.step: must be > 0"},
      {"a value given twice",
       [](json& g) {
         g["axes"][0]["values"] = {0, 10, 0};
       },
       "$.axes[0].values[2]: duplicate value"},
      {"a map of an axis the grid lacks",
       [](json& g) {
         g["maps"] = {{{"x", "node_b_offset_s"}, {"y", "ttl_s"}}};
       },
       "$.maps[0].y: no axis named \"ttl_s\""},
      {"a mark of a policy the grid lacks",
       [](json& g) {
         g["marks"] = {{{"label", "p"}, {"policy", "declared"}, {"at", json::object()}}};
       },
       "$.marks[0].policy: no policy labelled \"declared\""},
      {"a mark at an axis the grid lacks",
       [](json& g) {
         g["marks"] = {{{"label", "p"}, {"policy", "node_local"}, {"at", {{"ttl_s", 1}}}}};
       },
       "$.marks[0].at.ttl_s: no axis with this name"},
      {"a range whose last step would pass the int64 limit",
       [](json& g) {
         g["axes"][0].erase("values");
         g["axes"][0]["range"] = {{"from", 1}, {"to", INT64_MAX}, {"step", 4611686018427387904}};
       },
       "4611686018427387905 is out of range: must lie within [-1000000000000000, 1000000000000000]"},
      {"a range from the int64 minimum to its maximum",
       [](json& g) {
         g["axes"][0].erase("values");
         g["axes"][0]["range"] = {{"from", INT64_MIN}, {"to", INT64_MAX}, {"step", 1}};
       },
       "$.axes[0].range: more than 100000 values"},
      {"a bad pointer on the second axis", [](json& g) { g["axes"][1]["pointer"] = "/nodes/7/clock_offset_s"; },
       "$.axes[1].pointer: pointer /nodes/7/clock_offset_s has no parent"},
      {"a pointer through an array by a name", [](json& g) { g["axes"][1]["pointer"] = "/steps/first/at_s"; },
       "$.axes[1].pointer: pointer /steps/first/at_s"},
  }));
  INFO(c.name);
  auto grid = small_grid();
  c.edit(grid);
  CHECK_THAT(parse_error(grid), ContainsSubstring(c.error));
}

TEST_CASE("a shard must be I/N with 1 <= I <= N, or --shard names what is wrong") {
  const auto [text, error] = GENERATE(table<std::string, std::string>({
      {"3/2", "--shard I/N needs 1 <= I <= N: 3/2"},
      {"0/2", "--shard I/N needs 1 <= I <= N: 0/2"},
      {"1/0", "--shard I/N needs 1 <= I <= N: 1/0"},
      {"2", "--shard must be I/N, e.g. 1/2: 2"},
      {"1/2x", "--shard must be I/N with whole numbers: 1/2x"},
  }));
  INFO(text);
  CHECK_THROWS_WITH(sweep::Shard::parse(text), ContainsSubstring(error));
}

TEST_CASE("a range that ends at the int64 limit stops there: no step wraps around") {
  // Before the range was counted in unsigned arithmetic, the step past
  // INT64_MAX wrapped to a negative value and the loop never ended.
  auto grid = small_grid();
  grid["axes"][0].erase("values");
  grid["axes"][0]["range"] = {{"from", INT64_MAX - 8}, {"to", INT64_MAX}, {"step", 4}};
  const auto error = parse_error(grid);
  CHECK_THAT(error, ContainsSubstring("$.axes[0].values[0]: with policy"));
  CHECK_THAT(error, ContainsSubstring("9223372036854775799 is out of range"));
}

TEST_CASE("a grid knows which of its cells' steps depend on the remote's service-wide state") {
  CHECK(sweep::Grid::parse(small_grid(), "grid.json", SKEWBENCH_SOURCE_DIR).service_wide_reader_kinds().empty());
  auto fence = testing::small_grid_document({0, -20}, "scenarios/019-temporal-epoch-fence.json");
  fence["axes"] =
      json::array({{{"name", "rollback_offset_s"}, {"pointer", "/steps/5/offset_s"}, {"values", {0, -20}}}});
  CHECK(sweep::Grid::parse(fence, "grid.json", SKEWBENCH_SOURCE_DIR).service_wide_reader_kinds() ==
        std::vector<std::string>{"bind_temporal_epoch"});
  // A kind that only an axis value brings in counts too.
  auto varied = testing::small_grid_document({0, -20}, "scenarios/sweeps/019-base.json");
  varied["axes"] =
      json::array({{{"name", "step"}, {"pointer", "/steps/2/kind"}, {"values", {"observe", "bind_temporal_epoch"}}}});
  CHECK(sweep::Grid::parse(varied, "grid.json", SKEWBENCH_SOURCE_DIR).service_wide_reader_kinds() ==
        std::vector<std::string>{"bind_temporal_epoch"});
}
