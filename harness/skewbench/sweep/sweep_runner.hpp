#pragma once

// Runs a grid's cells with N parallel workers, and streams the records to
// cells.jsonl in cell order. On the real stack each worker has its own
// PostgreSQL and HTTP connections; on the in-process engine its own remote
// store in memory and outbox double, emptied before each cell.

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "infra/http_remote.hpp"
#include "infra/in_process.hpp"
#include "infra/pg_outbox.hpp"
#include "steps/step.hpp"
#include "sweep/cells.hpp"
#include "sweep/grid.hpp"

namespace skewbench::sweep {

// A deterministic slice: shard I of N holds the cells whose index % N == I - 1.
struct Shard {
  std::uint64_t index = 1;  // 1-based
  std::uint64_t count = 1;

  // Parses "I/N"; throws std::invalid_argument naming what is wrong.
  static Shard parse(const std::string& text);
  bool whole() const { return count == 1; }
  std::uint64_t size_of(std::uint64_t total_cells) const;
  std::uint64_t cell_at(std::uint64_t k) const { return (index - 1) + k * count; }
  nlohmann::json to_json() const;
};

struct SweepSettings {
  // What runs the cells. The in-process engine uses no URL, limit or timeout
  // below, and runs its remote in dedupe_mode.
  infra::Engine engine = infra::Engine::real;
  remote_effect::DedupeMode dedupe_mode = remote_effect::kDefaultDedupeMode;
  std::string database_url;
  // Worker i talks to remote_urls[i % size]: one remote per job keeps cells
  // that run at once from sharing the remote's service-wide state.
  std::vector<std::string> remote_urls;
  steps::RemoteControl* remote_control = nullptr;
  std::string run_id;
  unsigned jobs = 1;
  Shard shard;
  bool progress = true;
  const std::atomic<bool>* interrupted = nullptr;
  infra::HttpLimits http_limits;
  infra::DbTimeouts db_timeouts;
  // A worker whose services stay unreachable this long stops the sweep
  // (--max-unreachable-s); until then it reconnects with bounded backoff.
  int max_unreachable_s = 60;
  // --resume: cells kept from the earlier cells.jsonl are copied, not run.
  PreviousCells* previous = nullptr;
  // The file written in out_dir (a resumed sweep writes beside cells.jsonl
  // and renames over it when done).
  std::string cells_file = "cells.jsonl";
};

struct SweepOutcome {
  std::uint64_t cells_planned = 0;
  std::uint64_t cells_done = 0;
  std::string cells_core_digest;
  nlohmann::json per_policy;
  std::uint64_t errors = 0;
  bool interrupted = false;                // SIGINT/SIGTERM stopped the sweep
  std::optional<std::string> unreachable;  // why the sweep stopped: a service stayed unreachable
  std::uint64_t cells_reused = 0;          // copied from the sweep that was resumed
  double duration_s = 0;
};

// The remote each in-process worker of a sweep runs its cells on (in memory,
// in the sweep's dedupe mode, its boot_id named by the run id); the sweep's
// environment describes one made with the same options.
infra::InProcessRemote::Options in_process_remote_options(remote_effect::DedupeMode mode, const std::string& run_id);

// Writes cells.jsonl into out_dir. An infrastructure failure during a cell
// makes that cell ERROR; its worker then reconnects (backoff from 0.1 s,
// doubling, at most 5 s) before it takes the next cell, and the sweep stops
// with `unreachable` set when a service stays unreachable for
// max_unreachable_s.
SweepOutcome run_cells(const Grid& grid, const SweepSettings& settings, const std::filesystem::path& out_dir);

// The record of one finished cell, as a cells.jsonl line. A cell the
// in-process engine ran says so ("engine": "in-process", in its core too);
// a record without "engine" comes from the real stack.
nlohmann::json cell_record(const Grid& grid, const Cell& cell, const nlohmann::json& temporal_state,
                           const nlohmann::json& decision, const nlohmann::json& final_measurement,
                           scenario::Verdict verdict, const std::optional<std::string>& error, std::int64_t duration_us,
                           infra::Engine engine = infra::Engine::real);

}  // namespace skewbench::sweep
