#include "sweep/sweep_runner.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include <unistd.h>

#include "common/elapsed.hpp"
#include "common/errors.hpp"
#include "evidence/count_history.hpp"
#include "infra/http_remote.hpp"
#include "infra/pg_outbox.hpp"
#include "runner/runner.hpp"
#include "sweep/cells.hpp"

namespace skewbench::sweep {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// Shows done/total, cells/s and an ETA on a terminal; a line per 10% otherwise.
class Progress {
 public:
  Progress(std::uint64_t total, bool enabled)
      : total_(total), enabled_(enabled), tty_(::isatty(STDERR_FILENO) == 1), start_(Clock::now()) {}

  // `done` cells are written, the last of them with `record` (its verdict is counted).
  void update(std::uint64_t done, const json& record) {
    const auto verdict = record.is_object() ? record.value("verdict", "") : std::string();
    if (verdict == "CONFLICT") ++conflicts_;
    if (verdict == "ERROR") ++errors_;
    if (!enabled_ || total_ == 0) return;
    const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
    const double rate = elapsed > 0 ? static_cast<double>(done) / elapsed : 0;
    const double eta = rate > 0 ? static_cast<double>(total_ - done) / rate : 0;
    const auto n = [](std::uint64_t value) { return static_cast<unsigned long long>(value); };
    if (tty_) {
      std::fprintf(stderr, "\rsweep: %llu/%llu cells  %.1f cells/s  ETA %.0fs  CONFLICT %llu  ERROR %llu   ", n(done),
                   n(total_), rate, eta, n(conflicts_), n(errors_));
      if (done == total_) std::fputc('\n', stderr);
    } else {
      const auto decile = done * 10 / total_;
      if (decile > last_decile_ || done == total_) {
        last_decile_ = decile;
        std::fprintf(stderr, "sweep: %llu/%llu cells (%llu%%)  %.1f cells/s  ETA %.0fs  CONFLICT %llu  ERROR %llu\n",
                     n(done), n(total_), n(done * 100 / total_), rate, eta, n(conflicts_), n(errors_));
      }
    }
    std::fflush(stderr);
  }

 private:
  std::uint64_t total_;
  bool enabled_;
  bool tty_;
  Clock::time_point start_;
  std::uint64_t last_decile_ = 0;
  std::uint64_t conflicts_ = 0;  // of the cells written so far
  std::uint64_t errors_ = 0;
};

// Workers finish cells out of order; this puts them back in order before they
// reach the writer. Workers take cells in order, so it holds at most about one
// record per worker.
class ReorderBuffer {
 public:
  // No line stands for a cell kept from a resumed sweep: `kept` gives it.
  using KeptRecord = std::function<json(std::uint64_t k)>;
  ReorderBuffer(CellWriter& writer, Progress& progress, std::uint64_t window, KeptRecord kept)
      : writer_(writer), progress_(progress), window_(window), kept_(std::move(kept)) {}

  // Blocks a worker that wants cell k while k is more than `window` cells
  // ahead of the writer, so a stalled cell cannot make the buffer grow
  // without bound. Returns false when the sweep is stopping.
  bool wait_for_room(std::uint64_t k, const std::atomic<bool>& stop) {
    std::unique_lock<std::mutex> lock(mutex_);
    while (k >= next_ + window_) {
      if (stop.load()) return false;
      room_.wait_for(lock, std::chrono::milliseconds(100));
    }
    return true;
  }

  // `cell` is made by the worker, outside the lock.
  void push(std::uint64_t k, std::optional<CellLine> cell) {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_.emplace(k, std::move(cell));
    while (!pending_.empty() && pending_.begin()->first == next_) {
      const auto written = write(pending_.begin()->first, std::move(pending_.begin()->second));
      pending_.erase(pending_.begin());
      ++next_;
      progress_.update(next_, written.record);
    }
    room_.notify_all();
  }

  // After the workers stopped early: writes the cells that finished beyond
  // the first one missing, and the kept cells after it, in order, so an
  // interruption loses no finished cell.
  void drain(std::uint64_t planned, const std::function<bool(std::uint64_t)>& is_kept) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (std::uint64_t k = next_; k < planned; ++k) {
      if (const auto it = pending_.find(k); it != pending_.end()) {
        write(k, std::move(it->second));
      } else if (is_kept(k)) {
        write(k, std::nullopt);
      }
    }
    pending_.clear();
  }

 private:
  std::mutex mutex_;
  std::condition_variable room_;
  CellWriter& writer_;
  Progress& progress_;
  std::uint64_t window_;
  // Writes cell k (its line, or the kept one) and returns what was written.
  CellLine write(std::uint64_t k, std::optional<CellLine> cell) {
    auto written = cell ? std::move(*cell) : CellLine(kept_(k));
    writer_.write(written);
    return written;
  }

  KeptRecord kept_;
  std::map<std::uint64_t, std::optional<CellLine>> pending_;
  std::uint64_t next_ = 0;
};

// One worker's connections to both services, and the way back to them after
// a fault: reconnect with exponential backoff until both answer, or give up
// once they have been unreachable for the sweep's limit. On the in-process
// engine, the worker's own remote and outbox, which always connect.
class WorkerConnections {
 public:
  WorkerConnections(const SweepSettings& settings, std::string remote_url)
      : settings_(settings), remote_url_(std::move(remote_url)) {}

  bool ready() const { return runner_ != nullptr; }
  runner::ScenarioRunner& runner() { return *runner_; }
  const std::string& last_error() const { return last_error_; }

  void drop() {
    runner_.reset();
    remote_.reset();
    outbox_.reset();
    in_process_remote_ = nullptr;
    in_process_outbox_ = nullptr;
  }

  // Before a cell: the in-process engine's store and outbox are emptied, so
  // that every cell starts as on a fresh service and memory stays flat
  // however many cells run. The real stack keeps its state (its cells'
  // operations are namespaced).
  void start_cell() {
    if (in_process_remote_) in_process_remote_->clear();
    if (in_process_outbox_) in_process_outbox_->clear();
  }

  // Returns false when the services stayed unreachable past the limit, or
  // when `stopping` says so.
  template <typename Stopping>
  bool reconnect(Stopping stopping) {
    const auto since = Clock::now();
    auto backoff = std::chrono::milliseconds(100);
    for (;;) {
      // A stop asked for while a service hangs must not wait out a connect.
      if (stopping()) return false;
      if (try_connect()) return true;
      const auto waited = Clock::now() - since;
      if (waited >= std::chrono::seconds(settings_.max_unreachable_s)) {
        last_error_ = "unreachable for " + std::to_string(settings_.max_unreachable_s) +
                      " s (--max-unreachable-s): " + last_error_;
        return false;
      }
      // Sleep in short slices so that Ctrl-C is not kept waiting.
      for (auto slept = std::chrono::milliseconds(0); slept < backoff; slept += std::chrono::milliseconds(50)) {
        if (stopping()) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
    }
  }

 private:
  bool try_connect() {
    drop();
    try {
      if (settings_.engine == infra::Engine::in_process) {
        auto remote = std::make_unique<infra::InProcessRemote>(
            in_process_remote_options(settings_.dedupe_mode, settings_.run_id));
        auto outbox = std::make_unique<infra::InProcessOutbox>();
        in_process_remote_ = remote.get();
        in_process_outbox_ = outbox.get();
        remote_ = std::move(remote);
        outbox_ = std::move(outbox);
      } else {
        outbox_ = std::make_unique<infra::PgOutbox>(settings_.database_url, settings_.run_id, settings_.db_timeouts);
        remote_ = std::make_unique<infra::HttpRemote>(remote_url_, settings_.http_limits);
      }
      remote_->health();
    } catch (const std::exception& e) {
      last_error_ = e.what();
      drop();
      return false;
    }
    runner_ = std::make_unique<runner::ScenarioRunner>(*remote_, *outbox_,
                                                       runner::RunnerOptions{.run_id = settings_.run_id,
                                                                             .remote_control = settings_.remote_control,
                                                                             .interrupted = nullptr,
                                                                             .evaluate_expectations = false,
                                                                             .database_control = nullptr,
                                                                             .instances = nullptr});
    return true;
  }

  const SweepSettings& settings_;
  std::string remote_url_;
  std::unique_ptr<infra::OutboxApi> outbox_;
  std::unique_ptr<infra::RemoteApi> remote_;
  infra::InProcessRemote* in_process_remote_ = nullptr;  // remote_, on the in-process engine
  infra::InProcessOutbox* in_process_outbox_ = nullptr;  // outbox_, on the in-process engine
  std::unique_ptr<runner::ScenarioRunner> runner_;
  std::string last_error_;
};

}  // namespace

Shard Shard::parse(const std::string& text) {
  const auto slash = text.find('/');
  if (slash == std::string::npos) throw std::invalid_argument("--shard must be I/N, e.g. 1/2: " + text);
  Shard s;
  try {
    std::size_t used = 0;
    s.index = std::stoull(text.substr(0, slash), &used);
    if (used != slash) throw std::invalid_argument("");
    const auto rest = text.substr(slash + 1);
    s.count = std::stoull(rest, &used);
    if (used != rest.size()) throw std::invalid_argument("");
  } catch (const std::exception&) {
    throw std::invalid_argument("--shard must be I/N with whole numbers: " + text);
  }
  if (s.count == 0 || s.index == 0 || s.index > s.count) {
    throw std::invalid_argument("--shard I/N needs 1 <= I <= N: " + text);
  }
  return s;
}

std::uint64_t Shard::size_of(std::uint64_t total) const {
  return total > index - 1 ? (total - (index - 1) + count - 1) / count : 0;
}

json Shard::to_json() const { return {{"index", index}, {"count", count}}; }

infra::InProcessRemote::Options in_process_remote_options(remote_effect::DedupeMode mode, const std::string& run_id) {
  return {.state_file = std::nullopt, .mode = mode, .boot_id = "in-process-" + run_id, .default_ttl_s = 60};
}

json cell_record(const Grid& grid, const Cell& cell, const json& temporal_state, const json& decision,
                 const json& final_measurement, runner::Verdict verdict, const std::optional<std::string>& error,
                 std::int64_t duration_us, infra::Engine engine) {
  const auto& entry = grid.policies()[cell.policy_index];
  const json f = final_measurement.is_object() ? final_measurement : json::object();
  json record = {{"cell", cell.index},
                 {"policy", entry.label},
                 {"policy_name", entry.policy["name"]},
                 {"parameters", cell.parameters},
                 {"temporal_state", temporal_state},
                 {"decision", decision},
                 {"post_requests", f.value("post_requests", json(nullptr))},
                 {"effect_count", f.value("effect_count", json(nullptr))},
                 {"final_status", f.value("status", json(nullptr))},
                 {"verdict", verdict},
                 {"error", error ? json(*error) : json(nullptr)},
                 {"duration_us", duration_us}};
  if (engine != infra::Engine::real) record["engine"] = to_string(engine);
  return record;
}

namespace {

// What the workers of one sweep share: the next cell to take, the stop flag,
// and why the sweep stopped when a service stayed unreachable.
struct SharedCells {
  SharedCells(const Grid& g, const SweepSettings& s, ReorderBuffer& b, std::uint64_t cells_planned)
      : grid(g), settings(s), buffer(b), planned(cells_planned) {}

  const Grid& grid;
  const SweepSettings& settings;
  ReorderBuffer& buffer;
  std::uint64_t planned = 0;
  std::atomic<std::uint64_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex unreachable_mutex;
  std::optional<std::string> unreachable;

  bool is_kept(std::uint64_t k) const {
    return settings.previous && settings.previous->keeps(settings.shard.cell_at(k));
  }
  bool stopping() const { return stop.load() || (settings.interrupted && settings.interrupted->load()); }
};

// Runs cell k of the shard on the worker's connections and hands its record
// to the buffer.
void run_cell(SharedCells& shared, WorkerConnections& connections, std::uint64_t k) {
  const auto cell = shared.grid.cell(shared.settings.shard.cell_at(k));
  const auto cell_started = Clock::now();
  const auto scenario = shared.grid.cell_scenario(cell);
  connections.start_cell();
  auto r = connections.runner().run(scenario);
  evidence::hold_counts(scenario, r);
  // A cell that failed may have left its connections broken: start the next
  // cell on fresh ones.
  if (r.error) connections.drop();
  shared.buffer.push(k, CellLine(cell_record(shared.grid, cell, r.temporal_state(), r.decision(), r.final_json(),
                                             r.verdict, r.error, micros_since(cell_started), shared.settings.engine)));
}

// One worker: takes cells in order until none is left or the sweep stops.
void work(SharedCells& shared, unsigned worker) {
  const auto& urls = shared.settings.remote_urls;
  const bool in_process = shared.settings.engine == infra::Engine::in_process;
  if (urls.empty() && !in_process) throw std::logic_error("a sweep needs at least one remote URL");
  WorkerConnections connections(shared.settings, in_process ? std::string() : urls[worker % urls.size()]);
  for (;;) {
    if (!connections.ready() && !connections.reconnect([&shared] { return shared.stopping(); })) {
      if (!shared.stopping()) {
        std::lock_guard<std::mutex> lock(shared.unreachable_mutex);
        if (!shared.unreachable) shared.unreachable = connections.last_error();
      }
      shared.stop.store(true);
      return;
    }
    if (shared.stopping()) {
      shared.stop.store(true);
      return;
    }
    const auto k = shared.next.fetch_add(1);
    if (k >= shared.planned) return;
    if (!shared.buffer.wait_for_room(k, shared.stop)) return;
    if (shared.is_kept(k)) {
      shared.buffer.push(k, std::nullopt);
      continue;
    }
    try {
      run_cell(shared, connections, k);
    } catch (const Interrupted&) {
      // Ctrl-C cut the cell short: it is not done, so it is not written (a
      // resumed sweep runs it).
      shared.stop.store(true);
      return;
    }
  }
}

// Runs `jobs` workers to the end; rethrows the first exception one threw.
void run_workers(SharedCells& shared, unsigned jobs) {
  std::vector<std::thread> threads;
  std::exception_ptr failure;
  std::mutex failure_mutex;
  for (unsigned i = 0; i < jobs; ++i) {
    threads.emplace_back([&, i]() {
      try {
        work(shared, i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(failure_mutex);
        if (!failure) failure = std::current_exception();
        shared.stop.store(true);
      }
    });
  }
  for (auto& t : threads) t.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace

SweepOutcome run_cells(const Grid& grid, const SweepSettings& settings, const std::filesystem::path& out_dir) {
  SweepOutcome outcome;
  outcome.cells_planned = settings.shard.size_of(grid.cell_count());
  std::filesystem::create_directories(out_dir);
  CellWriter writer((out_dir / settings.cells_file).string());
  Progress progress(outcome.cells_planned, settings.progress);
  const unsigned jobs = std::max(1u, settings.jobs);
  ReorderBuffer buffer(writer, progress, 4ull * jobs,
                       [&](std::uint64_t k) { return settings.previous->take(settings.shard.cell_at(k)); });
  SharedCells shared(grid, settings, buffer, outcome.cells_planned);
  const auto started = Clock::now();
  run_workers(shared, jobs);
  buffer.drain(outcome.cells_planned, [&shared](std::uint64_t k) { return shared.is_kept(k); });

  outcome.unreachable = shared.unreachable;
  outcome.cells_done = writer.written();
  outcome.cells_core_digest = writer.finish();
  outcome.per_policy = writer.tally().to_json();
  outcome.errors = writer.tally().count(runner::Verdict::Error);
  outcome.cells_reused = settings.previous ? settings.previous->kept_count() : 0;
  outcome.interrupted = !outcome.unreachable && outcome.cells_done < outcome.cells_planned;
  outcome.duration_s = std::chrono::duration<double>(Clock::now() - started).count();
  return outcome;
}

}  // namespace skewbench::sweep
