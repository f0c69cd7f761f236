// bench_engine: the in-process engine against the real stack, side by side.
//
// In one run:
//   1. for each grid (default: the three shipped ones) and each job count
//      (default 1 and 2), the grid's cells on the real stack (a throwaway
//      PostgreSQL cluster and one remote-effect per job, as `skewbench sweep`
//      starts them) and on the in-process engine, cells/s of each (the cells
//      only: the services' start is not counted) and their ratio. Each engine
//      runs the grid --repeats times, interleaved, and the median is shown; an
//      in-process repeat runs the grid again (each pass a sweep of its own, its
//      setup counted) until a second has passed, as one pass takes
//      milliseconds. Every cell of every in-process run is compared with the real stack's (all of
//      the record but its wall time, error text and engine): a difference is
//      printed and makes the bench exit 1;
//   2. the store's floor: the calls each cell of the grid made to
//      remote-effect's store (recorded once through the in-process remote,
//      parsed by the protocol's own parsers), replayed on the store in memory
//      alone, emptied before each cell as a worker empties it, with as many
//      threads as jobs. No engine that keeps this store can run a grid faster
//      than that; the bench prints it next to 100 times the real stack;
//   3. the peak RSS of `skewbench sweep --engine in-process --jobs 2` as a
//      process, on generated grids of growing cell counts (--rss-cells, up to
//      1,000,000 and more), to show that memory stays flat.
// It prints figures; it is not a pass/fail test of speed.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <skewbench/build_info.hpp>

#include "common/allocator.hpp"
#include "common/files.hpp"
#include "infra/in_process.hpp"
#include "peak_rss.hpp"
#include "remote_effect/store.hpp"
#include "runner/runner.hpp"
#include "runner/stack.hpp"
#include "sweep/grid.hpp"
#include "sweep/sweep_runner.hpp"

using namespace skewbench;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

struct Measured {
  double cells_per_s = 0;
  std::vector<json> records;  // as both engines must agree on them
};

std::vector<json> measured_records(const fs::path& cells_file) {
  std::ifstream in(cells_file);
  std::vector<json> out;
  for (std::string line; std::getline(in, line);) {
    auto record = json::parse(line);
    record.erase("duration_us");
    record.erase("error");
    record.erase("engine");
    out.push_back(std::move(record));
  }
  return out;
}

Measured run_grid(const sweep::Grid& grid, unsigned jobs, const runner::Stack* stack,
                  remote_effect::DedupeMode dedupe_mode) {
  TempDir out("skewbench-bench-engine");
  sweep::SweepSettings settings;
  settings.engine = stack ? infra::Engine::real : infra::Engine::in_process;
  settings.dedupe_mode = dedupe_mode;
  if (stack) {
    settings.database_url = stack->database_url();
    settings.remote_urls = stack->remote_urls();
  }
  settings.run_id = runner::new_run_id();
  settings.jobs = jobs;
  settings.progress = false;
  const auto outcome = sweep::run_cells(grid, settings, out.path());
  if (outcome.cells_done != grid.cell_count() || outcome.errors > 0) {
    throw std::runtime_error(grid.id() + " on the " + std::string(to_string(settings.engine)) +
                             " engine: " + std::to_string(outcome.cells_done) + " cells done, " +
                             std::to_string(outcome.errors) + " ERROR");
  }
  return {.cells_per_s = static_cast<double>(outcome.cells_done) / outcome.duration_s,
          .records = measured_records(out.path() / "cells.jsonl")};
}

// The least time the in-process engine's cells/s of one repeat is measured over.
constexpr double kInProcessMeasureS = 1.0;

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const auto n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// Prints every cell the two engines disagree on; returns how many.
std::size_t differences(const std::string& grid, const std::vector<json>& real, const std::vector<json>& in_process) {
  std::size_t different = 0;
  if (real.size() != in_process.size()) {
    std::printf("  DIFFERENT %s: %zu cells on the real stack, %zu in-process\n", grid.c_str(), real.size(),
                in_process.size());
    return 1;
  }
  for (std::size_t i = 0; i < real.size(); ++i) {
    if (real[i] == in_process[i]) continue;
    if (++different <= 5) {
      std::printf("  DIFFERENT %s cell %zu:\n    real       %s\n    in-process %s\n", grid.c_str(), i,
                  real[i].dump().c_str(), in_process[i].dump().c_str());
    }
  }
  return different;
}

// One grid at one job count, as measured side by side.
struct GridFigures {
  std::string path;
  std::string id;
  remote_effect::DedupeMode mode = remote_effect::kDefaultDedupeMode;  // of its base scenario
  unsigned jobs = 1;
  double real_cells_per_s = 0;
  double in_process_cells_per_s = 0;
};

struct GridsMeasured {
  std::vector<GridFigures> figures;
  std::size_t different = 0;  // cells the engines disagree on
};

GridsMeasured bench_grids(const std::vector<std::string>& grid_paths, const std::vector<unsigned>& job_counts,
                          int repeats) {
  std::printf(
      "\ncells/s of the cells (median of %d runs each, interleaved; in-process: passes of the grid for at least "
      "%.0f s a run); every in-process cell compared with the real stack's\n",
      repeats, kInProcessMeasureS);
  std::printf("  %-28s %6s %5s %12s %14s %8s %10s\n", "grid", "cells", "jobs", "real", "in-process", "ratio",
              "different");
  std::fflush(stdout);
  GridsMeasured measured;
  for (const auto& path : grid_paths) {
    const auto grid = sweep::Grid::load(path);
    const auto base = grid.cell_scenario(grid.cell(0));
    const auto mode = base.dedupe_mode.value_or(remote_effect::kDefaultDedupeMode);
    for (const unsigned jobs : job_counts) {
      runner::StackOptions options;
      options.quiet = true;
      options.remote_instances = jobs;
      options.durability = runner::Durability::throwaway;  // a sweep's default
      runner::Stack stack(options);
      std::vector<double> real_rates;
      std::vector<double> in_process_rates;
      std::size_t different = 0;
      std::vector<json> real_records;
      for (int r = 0; r < repeats; ++r) {
        auto real = run_grid(grid, jobs, &stack, mode);
        real_rates.push_back(real.cells_per_s);
        if (real_records.empty()) real_records = std::move(real.records);
        // A shipped grid takes the in-process engine a few milliseconds, too
        // short a time to measure: it runs the grid again, each pass a sweep
        // of its own (its setup counted) compared cell for cell, until
        // kInProcessMeasureS have passed.
        double passes_s = 0;
        std::uint64_t passes_cells = 0;
        do {
          const auto in_process = run_grid(grid, jobs, nullptr, mode);
          passes_s += static_cast<double>(in_process.records.size()) / in_process.cells_per_s;
          passes_cells += in_process.records.size();
          different += differences(grid.id(), real_records, in_process.records);
        } while (passes_s < kInProcessMeasureS);
        in_process_rates.push_back(static_cast<double>(passes_cells) / passes_s);
      }
      const auto real_rate = median(real_rates);
      const auto in_process_rate = median(in_process_rates);
      std::printf("  %-28s %6llu %5u %12.1f %14.1f %7.0fx %10zu\n", grid.id().c_str(),
                  static_cast<unsigned long long>(grid.cell_count()), jobs, real_rate, in_process_rate,
                  in_process_rate / real_rate, different);
      std::fflush(stdout);
      measured.different += different;
      measured.figures.push_back({.path = path,
                                  .id = grid.id(),
                                  .mode = mode,
                                  .jobs = jobs,
                                  .real_cells_per_s = real_rate,
                                  .in_process_cells_per_s = in_process_rate});
    }
  }
  return measured;
}

// One call a cell made to remote-effect, as its store receives it.
struct StoreCall {
  enum class Kind { post, read, gc, totals };
  Kind kind = Kind::read;
  remote_effect::PostRequest post;
  remote_effect::GcRequest gc;
  std::string operation_id;  // of a read
};
using CellCalls = std::vector<StoreCall>;

// Forwards every call to the in-process remote and notes the store request
// behind it, parsed by the protocol's own parsers as the in-process remote
// parses it.
class RecordingRemote final : public infra::ForwardingRemote {
 public:
  RecordingRemote(infra::RemoteApi& inner, std::int64_t default_ttl_s)
      : ForwardingRemote(inner), default_ttl_s_(default_ttl_s) {}

  CellCalls calls;

  infra::PostExchange post_effect(const infra::PostEffectRequest& request) override {
    const auto headers = remote_effect::post_effect_headers(request);
    const auto parsed =
        remote_effect::parse_post_request({headers.begin(), headers.end()}, request.body, default_ttl_s_);
    // A request the parser refuses never reaches the store.
    if (const auto* post = std::get_if<remote_effect::PostRequest>(&parsed)) {
      StoreCall call;
      call.kind = StoreCall::Kind::post;
      call.post = *post;
      calls.push_back(std::move(call));
    }
    return ForwardingRemote::post_effect(request);
  }
  infra::StatusExchange status(const std::string& operation_id, std::int64_t logical_time_s) override {
    StoreCall call;
    call.kind = StoreCall::Kind::read;
    call.operation_id = operation_id;
    calls.push_back(std::move(call));
    return ForwardingRemote::status(operation_id, logical_time_s);
  }
  infra::HealthExchange health() override {
    StoreCall call;
    call.kind = StoreCall::Kind::totals;
    calls.push_back(std::move(call));
    return ForwardingRemote::health();
  }
  infra::GcExchange gc(const std::string& operation_id, std::int64_t logical_time_s) override {
    StoreCall call;
    call.kind = StoreCall::Kind::gc;
    call.gc = {.operation_id = operation_id, .logical_time_s = logical_time_s};
    calls.push_back(std::move(call));
    return ForwardingRemote::gc(operation_id, logical_time_s);
  }

 private:
  std::int64_t default_ttl_s_;
};

// The store calls of each cell of the grid, run once on the in-process engine.
std::vector<CellCalls> recorded_store_calls(const sweep::Grid& grid, remote_effect::DedupeMode mode) {
  const auto run_id = runner::new_run_id();
  const auto options = sweep::in_process_remote_options(mode, run_id);
  infra::InProcessRemote remote(options);
  infra::InProcessOutbox outbox;
  RecordingRemote recording(remote, options.default_ttl_s);
  runner::RunnerOptions runner_options;
  runner_options.run_id = run_id;
  runner_options.evaluate_expectations = false;
  runner::ScenarioRunner runner(recording, outbox, runner_options);
  std::vector<CellCalls> cells;
  for (std::uint64_t k = 0; k < grid.cell_count(); ++k) {
    remote.clear();
    outbox.clear();
    recording.calls.clear();
    const auto result = runner.run(grid.cell_scenario(grid.cell(k)));
    if (result.error) throw std::runtime_error(grid.id() + " cell " + std::to_string(k) + ": " + *result.error);
    cells.push_back(std::move(recording.calls));
  }
  return cells;
}

// Cells/s of the recorded calls replayed on the store alone: `jobs` threads,
// each with a store in memory of its own that it empties before each cell,
// taking every jobs-th cell; passes of the grid (each opening its stores)
// until kInProcessMeasureS have passed, as an in-process run is measured.
double store_floor_cells_per_s(const std::vector<CellCalls>& cells, unsigned jobs, remote_effect::DedupeMode mode) {
  double passes_s = 0;
  std::uint64_t passes_cells = 0;
  do {
    const auto started = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    for (unsigned worker = 0; worker < jobs; ++worker) {
      threads.emplace_back([&cells, jobs, mode, worker] {
        remote_effect::Store store(remote_effect::Store::InMemory{}, mode);
        for (std::size_t k = worker; k < cells.size(); k += jobs) {
          store.clear();
          for (const auto& call : cells[k]) {
            switch (call.kind) {
              case StoreCall::Kind::post:
                store.post(call.post);
                break;
              case StoreCall::Kind::read:
                store.read(call.operation_id);
                break;
              case StoreCall::Kind::gc:
                store.gc(call.gc);
                break;
              case StoreCall::Kind::totals:
                store.totals();
                break;
            }
          }
        }
      });
    }
    for (auto& thread : threads) thread.join();
    passes_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    passes_cells += cells.size();
  } while (passes_s < kInProcessMeasureS);
  return static_cast<double>(passes_cells) / passes_s;
}

// The store's floor of each grid next to what was measured: no engine that
// keeps remote-effect's store in SQLite runs a grid faster than its floor.
void bench_store_floor(const std::vector<GridFigures>& figures, int repeats) {
  std::printf(
      "\nthe store's floor: each cell's calls to remote-effect's store (in memory) replayed on it alone, nothing "
      "else (cells/s, median of %d runs)\n",
      repeats);
  std::printf("  %-28s %5s %12s %14s %14s %14s %11s\n", "grid", "jobs", "real", "in-process", "store floor",
              "100x real", "floor/real");
  std::map<std::string, std::vector<CellCalls>> calls_of;  // by grid path
  for (const auto& row : figures) {
    auto& calls = calls_of[row.path];
    if (calls.empty()) calls = recorded_store_calls(sweep::Grid::load(row.path), row.mode);
    std::vector<double> rates;
    for (int r = 0; r < repeats; ++r) rates.push_back(store_floor_cells_per_s(calls, row.jobs, row.mode));
    const auto floor_rate = median(rates);
    std::printf("  %-28s %5u %12.1f %14.1f %14.1f %14.1f %10.0fx\n", row.id.c_str(), row.jobs, row.real_cells_per_s,
                row.in_process_cells_per_s, floor_rate, 100 * row.real_cells_per_s, floor_rate / row.real_cells_per_s);
    std::fflush(stdout);
  }
}

// The peak RSS of `skewbench sweep --engine in-process` as a process of its
// own, on a generated grid of about n cells.
void bench_rss(const std::string& skewbench_bin, const std::string& base_scenario, const std::vector<long>& cells) {
  std::printf("\npeak RSS of skewbench sweep --engine in-process --jobs 2\n  %10s %12s %10s %12s\n", "cells",
              "peak_rss_MiB", "seconds", "cells/s");
  std::fflush(stdout);
  for (const long n : cells) {
    TempDir dir("skewbench-bench-engine-rss");
    const auto grid_path = dir.path() / "grid.json";
    write_file_atomically(grid_path, bench::rss_grid(n, base_scenario).dump());
    const auto run =
        bench::run_measuring_rss({skewbench_bin, "sweep", grid_path.string(), "--out", (dir.path() / "out").string(),
                                  "--engine", "in-process", "--jobs", "2", "-q"});
    const auto done = bench::rss_grid_cells(n);
    std::printf("  %10ld %12.1f %10.1f %12.0f%s\n", done, run.peak_rss_mib, run.seconds,
                static_cast<double>(done) / run.seconds, run.exit_code == 0 ? "" : "  (sweep failed)");
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_engine: the in-process engine against the real stack, cell for cell, and its memory"};
  const std::string sweeps = std::string(SKEWBENCH_SOURCE_DIR) + "/scenarios/sweeps/";
  std::vector<std::string> grids = {sweeps + "018-offset-by-epsilon.json", sweeps + "017-ttl-by-recovery-delay.json",
                                    sweeps + "019-rollback-by-gc.json"};
  std::vector<unsigned> jobs = {1, 2};
  int repeats = 3;
  std::vector<long> rss_cells = {1000, 100000, 1000000};
  std::string skewbench_bin = SKEWBENCH_CLI_BIN;
  app.add_option("--grids", grids, "grid files (default: the three shipped grids)");
  app.add_option("--jobs", jobs, "job counts (default: 1 2)")->check(CLI::Range(1, 32));
  app.add_option("--repeats", repeats, "runs of each grid on each engine; the median is shown")
      ->check(CLI::PositiveNumber);
  app.add_option("--rss-cells", rss_cells, "cell counts for the RSS part (default: 1000 100000 1000000; 0: skip)");
  app.add_option("--skewbench-bin", skewbench_bin, "skewbench executable for the RSS part");
  CLI11_PARSE(app, argc, argv);

  std::printf("bench_engine  harness %s (%s, %s, %s)  %u CPUs\n", build_info::kVersion, build_info::kGitCommit,
              build_info::kBuildType, allocator_name().c_str(), std::thread::hardware_concurrency());
  if (build_info::kIsDebugBuild) std::printf("***WARNING*** harness built as Debug: figures are not representative\n");
  try {
    const auto measured = bench_grids(grids, jobs, repeats);
    bench_store_floor(measured.figures, repeats);
    rss_cells.erase(std::remove(rss_cells.begin(), rss_cells.end(), 0L), rss_cells.end());
    if (!rss_cells.empty()) bench_rss(skewbench_bin, sweeps + "018-base.json", rss_cells);
    if (measured.different > 0) {
      std::printf("\nFAIL: %zu in-process cells differ from the real stack's\n", measured.different);
      return 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_engine: %s\n", e.what());
    return 3;
  }
  return 0;
}
