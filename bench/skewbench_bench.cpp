// bench_skewbench: what a scenario costs against what its round trips must cost.
//
// In one run, against one PostgreSQL cluster and one remote-effect process:
//   1. the floor: a PostgreSQL prepared-statement round trip, a PostgreSQL
//      write transaction (BEGIN, INSERT, COMMIT), a single-statement
//      autocommit write (one INSERT, one round trip), a keep-alive HTTP round
//      trip to remote-effect (GET /health) and a remote-effect durable commit
//      (POST /effects, new key);
//   2. `skewbench run` as a whole process next to `skewbench --version`, and
//      its phases timed in-process (checks, services, scenarios, evidence, as
//      app::run passes through them);
//   3. the scenarios needing no service control, warm, repeated; each run's
//      calls are counted by kind, its PostgreSQL wire round trips as the outbox
//      adapter counts what it sends (PgOutbox::wire_count), and the measured
//      time is divided by the time those round trips take at the floor: a
//      round trip that commits at the autocommit write's, any other at the
//      prepared statement's; and next to that, each run's own round trips
//      replayed bare in the same order right after it (BareReplay), a floor
//      that holds the cost of switching between the services;
//   4. sweep throughput in cells/s with 1, 2, 4 and 8 jobs on the shipped grid,
//      each job on its own remote-effect as `skewbench sweep` runs them, under
//      the durable and the throwaway profile side by side (each on services
//      started with it);
//   5. the peak RSS of `skewbench sweep` for growing cell counts (it streams,
//      so the figure should stay flat).
//   6. the whole series, `skewbench run scenarios/` starting its own services,
//      in each clock mode (logical: the time in a header; real: each service's
//      wall clock under libfaketime, and ack loss by the fault proxy), runs of
//      the two interleaved: what driving real clocks costs in wall time.
// Real time is read here only to measure; no decision depends on it.

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <httplib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <CLI/CLI.hpp>
#include <pqxx/pqxx>

#include <skewbench/build_info.hpp>

#include "app/run.hpp"
#include "common/files.hpp"
#include "infra/http_remote.hpp"
#include "infra/pg_outbox.hpp"
#include "infra/pqxx_compat.hpp"
#include "peak_rss.hpp"
#include "runner/runner.hpp"
#include "runner/stack.hpp"
#include "scenario/scenario.hpp"
#include "sweep/grid.hpp"
#include "sweep/sweep_runner.hpp"

using namespace skewbench;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

double micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

struct Stats {
  std::vector<double> samples_us;
  double median() const {
    auto s = samples_us;
    std::sort(s.begin(), s.end());
    return s.empty() ? 0 : s[s.size() / 2];
  }
  double mean() const {
    double sum = 0;
    for (const double v : samples_us) sum += v;
    return samples_us.empty() ? 0 : sum / static_cast<double>(samples_us.size());
  }
  double p99() const {
    auto s = samples_us;
    std::sort(s.begin(), s.end());
    return s.empty() ? 0 : s[std::min(s.size() - 1, s.size() * 99 / 100)];
  }
};

template <typename F>
Stats measure(int iterations, F&& body) {
  Stats s;
  for (int i = 0; i < iterations; ++i) {
    const auto t = Clock::now();
    body(i);
    s.samples_us.push_back(micros(Clock::now() - t));
  }
  return s;
}

// The four kinds of call a scenario makes.
enum Kind { kPgRead, kPgWrite, kHttpGet, kHttpPost, kKinds };

using Counts = std::array<int, kKinds>;
using Times = std::array<double, kKinds>;  // microseconds spent in each kind

// PostgreSQL wire round trips of a run, as the adapter counted them.
struct PgWire {
  std::uint64_t round_trips = 0;
  std::uint64_t commits = 0;  // of the round trips, those that commit
};

// One call a scenario made, as the decorators saw it: its kind, the
// PostgreSQL wire round trips it cost (of them, those that commit), and, for
// a POST, whether it asked the remote to drop its answer.
struct Call {
  Kind kind = kPgRead;
  std::uint64_t pg_round_trips = 0;
  std::uint64_t pg_commits = 0;
  bool drop_ack = false;
};
using CallLog = std::vector<Call>;

// The floor, in mean microseconds.
struct Floor {
  double pg_round_trip = 0;  // a prepared statement that commits nothing
  double pg_autocommit = 0;  // a single-statement write: one round trip that commits
  double http_get = 0;
  double http_post = 0;
};

// Times one call of a kind into the run's tallies.
template <typename F>
auto timed(Counts& counts, Times& times, Kind kind, F&& call) {
  ++counts[kind];
  const auto t = Clock::now();
  struct Stop {
    Times& times;
    Kind kind;
    Clock::time_point t;
    ~Stop() { times[kind] += micros(Clock::now() - t); }
  } stop{times, kind, t};
  return call();
}

// Decorators that count and time every round trip a scenario makes.
class CountingRemote final : public infra::RemoteApi {
 public:
  CountingRemote(infra::RemoteApi& inner, Counts& counts, Times& times, CallLog& log)
      : inner_(inner), c_(counts), t_(times), log_(log) {}
  infra::PostExchange post_effect(const infra::PostEffectRequest& r) override {
    log_.push_back({.kind = kHttpPost, .pg_round_trips = 0, .pg_commits = 0, .drop_ack = r.drop_ack});
    return timed(c_, t_, kHttpPost, [&] { return inner_.post_effect(r); });
  }
  infra::StatusExchange status(const std::string& op, std::int64_t t) override {
    log_.push_back({.kind = kHttpGet, .pg_round_trips = 0, .pg_commits = 0, .drop_ack = false});
    return timed(c_, t_, kHttpGet, [&] { return inner_.status(op, t); });
  }
  infra::HealthExchange health() override {
    log_.push_back({.kind = kHttpGet, .pg_round_trips = 0, .pg_commits = 0, .drop_ack = false});
    return timed(c_, t_, kHttpGet, [&] { return inner_.health(); });
  }
  infra::GcExchange gc(const std::string& op, std::int64_t t) override {
    log_.push_back({.kind = kHttpPost, .pg_round_trips = 0, .pg_commits = 0, .drop_ack = false});
    return timed(c_, t_, kHttpPost, [&] { return inner_.gc(op, t); });
  }

 private:
  infra::RemoteApi& inner_;
  Counts& c_;
  Times& t_;
  CallLog& log_;
};

// Counts calls and, from the adapter's own counter, the wire round trips
// each call cost.
class CountingOutbox final : public infra::OutboxApi {
  // Defined first: the overrides below deduce their return type from it.
  template <typename F>
  auto call(Kind kind, F&& body) {
    const auto before = inner_.wire_count();
    struct Tally {
      const infra::PgOutbox& inner;
      const infra::PgOutbox::WireCount before;
      PgWire& wire;
      CallLog& log;
      Kind kind;
      ~Tally() {
        const auto round_trips = inner.wire_count().round_trips - before.round_trips;
        const auto commits = inner.wire_count().commits - before.commits;
        wire.round_trips += round_trips;
        wire.commits += commits;
        log.push_back({.kind = kind, .pg_round_trips = round_trips, .pg_commits = commits, .drop_ack = false});
      }
    } tally{inner_, before, wire_, log_, kind};
    return timed(c_, t_, kind, std::forward<F>(body));
  }

 public:
  CountingOutbox(infra::PgOutbox& inner, Counts& counts, Times& times, PgWire& wire, CallLog& log)
      : inner_(inner), c_(counts), t_(times), wire_(wire), log_(log) {}
  void declare_operation(const std::string& op, std::int64_t version) override {
    call(kPgWrite, [&] { inner_.declare_operation(op, version); });
  }
  infra::OutboxRow commit_operation(const std::string& op, const std::string& key, std::int64_t ttl) override {
    return call(kPgWrite, [&] { return inner_.commit_operation(op, key, ttl); });
  }
  void record_attempt(const std::string& op, std::int64_t t) override {
    call(kPgWrite, [&] { inner_.record_attempt(op, t); });
  }
  void record_outcome(const std::string& op, infra::TransportOutcome o, bool d, std::int64_t t) override {
    call(kPgWrite, [&] { inner_.record_outcome(op, o, d, t); });
  }
  void mark_delivered(const std::string& op, std::int64_t t) override {
    call(kPgWrite, [&] { inner_.mark_delivered(op, t); });
  }
  infra::OutboxRow read(const std::string& op) override {
    return call(kPgRead, [&] { return inner_.read(op); });
  }
  void reconnect() override { inner_.reconnect(); }

 private:
  infra::PgOutbox& inner_;
  Counts& c_;
  Times& t_;
  PgWire& wire_;
  CallLog& log_;
};

// The floor's PostgreSQL statements on `c`: floor_select (a round trip that
// commits nothing) and floor_insert (a write to a logged table, like the
// outbox, so its commit waits for the WAL flush).
void prepare_floor_statements(pqxx::connection& c) {
  {
    pqxx::work tx(c);
    infra::pq::exec0(tx, "CREATE SCHEMA IF NOT EXISTS skewbench_bench");
    infra::pq::exec0(tx, "CREATE TABLE IF NOT EXISTS skewbench_bench.floor (v bigint)");
    tx.commit();
  }
  c.prepare("floor_select", "SELECT $1::bigint");
  c.prepare("floor_insert", "INSERT INTO skewbench_bench.floor (v) VALUES ($1)");
}

// The floor's POST: a new operation and key, so the remote applies it and
// commits durably.
void post_new_effect(infra::HttpRemote& remote, const std::string& id, bool drop_ack) {
  remote.post_effect({.operation_id = id,
                      .idempotency_key = id,
                      .ttl_s = 60,
                      .logical_time_s = 1'000'000,
                      .drop_ack = drop_ack,
                      .body = "{}",
                      .expected_temporal_epoch = std::nullopt});
}

Floor measure_floor(const std::string& database_url, const std::string& remote_url, int n) {
  pqxx::connection c(database_url);
  prepare_floor_statements(c);
  const auto pg_read = measure(n, [&](int i) {
    pqxx::nontransaction tx(c);
    infra::pq::exec_prepared(tx, "floor_select", static_cast<std::int64_t>(i));
  });
  const auto pg_write = measure(n, [&](int i) {
    pqxx::work tx(c);
    infra::pq::exec_prepared(tx, "floor_insert", static_cast<std::int64_t>(i));
    tx.commit();
  });
  const auto pg_autocommit = measure(n, [&](int i) {
    pqxx::nontransaction tx(c);
    infra::pq::exec_prepared(tx, "floor_insert", static_cast<std::int64_t>(i));
  });
  infra::HttpRemote remote(remote_url);
  const auto http_get = measure(n, [&](int) { remote.health(); });
  const auto http_post = measure(
      n, [&](int i) { post_new_effect(remote, "floor-" + runner::new_run_id() + "-" + std::to_string(i), false); });
  // Costs add up, so the floor a scenario implies is a sum of means.
  std::printf("floor (%d iterations each)                          mean_us  median_us     p99_us\n", n);
  const std::pair<const char*, const Stats*> rows[] = {
      {"PostgreSQL prepared-statement round trip", &pg_read},
      {"PostgreSQL write transaction (BEGIN, INSERT, COMMIT)", &pg_write},
      {"PostgreSQL autocommit write (one INSERT, one trip)", &pg_autocommit},
      {"HTTP keep-alive round trip (GET /health)", &http_get},
      {"remote-effect durable commit (POST)", &http_post}};
  for (const auto& [label, s] : rows) {
    std::printf("  %-54s %9.1f %10.1f %10.1f\n", label, s->mean(), s->median(), s->p99());
  }
  return {.pg_round_trip = pg_read.mean(),
          .pg_autocommit = pg_autocommit.mean(),
          .http_get = http_get.mean(),
          .http_post = http_post.mean()};
}

// What the outbox adapter adds to a bare round trip: its read (one prepared
// statement, under the client-side deadline) next to the floor's.
void measure_adapter_read(infra::PgOutbox& outbox, int n) {
  const auto operation_id = "bench-adapter-" + runner::new_run_id();
  outbox.declare_operation(operation_id, 1);
  outbox.read(operation_id);  // prepares the statement on this connection
  const auto read = measure(n, [&](int) { outbox.read(operation_id); });
  std::printf("  %-54s %9.1f %10.1f %10.1f\n", "outbox read through PgOutbox (one round trip)", read.mean(),
              read.median(), read.p99());
}

// The round trips of one scenario run, bare and in the run's order, each as
// the floor's call of its kind: a PostgreSQL round trip that commits as the
// autocommit INSERT, any other as the prepared SELECT (within one call the
// commits first: the order inside a call is not recorded); a GET (/status or
// /health) as GET /health; a POST (/effects or /maintenance/gc) as a POST
// /effects of a fresh key, applied and durably committed, with X-Drop-Ack when
// the scenario's POST had it (so the next call reconnects, as the scenario's
// did). Unlike the floor's loops, which repeat one kind of call, this replays
// the mix, so the machine's cost of switching between the services (a
// process waking on each) is in the floor as it is in the scenario.
class BareReplay {
 public:
  BareReplay(const std::string& database_url, const std::string& remote_url)
      : pg_(database_url), remote_(remote_url), prefix_("replay-" + runner::new_run_id() + "-") {
    prepare_floor_statements(pg_);
  }

  // Microseconds the replay of `log` took.
  double run_us(const CallLog& log) {
    const auto t = Clock::now();
    for (const auto& call : log) {
      for (std::uint64_t i = 0; i < call.pg_round_trips; ++i) {
        pqxx::nontransaction tx(pg_);
        infra::pq::exec_prepared(tx, i < call.pg_commits ? "floor_insert" : "floor_select",
                                 static_cast<std::int64_t>(i));
      }
      if (call.kind == kHttpGet) remote_.health();
      if (call.kind == kHttpPost) post_new_effect(remote_, prefix_ + std::to_string(++posts_), call.drop_ack);
    }
    return micros(Clock::now() - t);
  }

 private:
  pqxx::connection pg_;
  infra::HttpRemote remote_;
  std::string prefix_;
  std::uint64_t posts_ = 0;
};

// The scenarios a run against external services can run: those that neither
// restart nor pause a service.
std::vector<scenario::Scenario> external_service_scenarios(const std::string& scenario_dir) {
  std::vector<scenario::Scenario> out;
  for (const auto& file : scenario::collect_scenario_files({scenario_dir})) {
    auto s = scenario::load_scenario_file(file);
    if (!s.needs_remote_control() && !s.needs_database_control()) out.push_back(std::move(s));
  }
  return out;
}

// Costs add up, so the floor a run implies is a sum of means: each PostgreSQL
// round trip that commits at the autocommit write's, any other at the
// prepared statement's, and each HTTP call at its kind's.
double implied_floor_us(const PgWire& wire, const Counts& counts, const Floor& floor) {
  const auto other = static_cast<double>(wire.round_trips - wire.commits);
  return other * floor.pg_round_trip + static_cast<double>(wire.commits) * floor.pg_autocommit +
         counts[kHttpGet] * floor.http_get + counts[kHttpPost] * floor.http_post;
}

struct ScenarioFigures {
  Counts counts{};  // calls of the last run
  PgWire wire;      // PostgreSQL round trips of the last run
  Times total_times{};
  Stats stats;
  Stats replay;  // the bare replay of each run's round trips
};

// Runs the scenario `repeats` times, each run followed by the bare replay of
// its round trips, so both meet the machine in the same state.
ScenarioFigures run_scenario(const scenario::Scenario& s, infra::RemoteApi& remote, infra::PgOutbox& outbox,
                             BareReplay& replay, int repeats) {
  ScenarioFigures f;
  for (int i = 0; i < repeats; ++i) {
    f.counts.fill(0);
    f.wire = {};
    Times times{};
    CallLog log;
    CountingRemote counting_remote(remote, f.counts, times, log);
    CountingOutbox counting_outbox(outbox, f.counts, times, f.wire, log);
    runner::ScenarioRunner r(counting_remote, counting_outbox,
                             {.run_id = runner::new_run_id(),
                              .remote_control = nullptr,
                              .interrupted = nullptr,
                              .evaluate_expectations = true,
                              .database_control = nullptr});
    const auto t = Clock::now();
    const auto result = r.run(s);
    f.stats.samples_us.push_back(micros(Clock::now() - t));
    for (int k = 0; k < kKinds; ++k) f.total_times[k] += times[k];
    if (!result.pass) {
      std::fprintf(stderr, "scenario %s did not pass: %s\n", s.id.c_str(),
                   result.error.value_or("a check failed").c_str());
      std::exit(3);
    }
    f.replay.samples_us.push_back(replay.run_us(log));
  }
  return f;
}

void bench_scenarios(const std::string& scenario_dir, const runner::Stack& stack, infra::RemoteApi& remote,
                     infra::PgOutbox& outbox, int repeats, const Floor& floor) {
  std::printf("\nscenarios needing no service control, warm, %d runs each; calls, and PostgreSQL wire round trips\n",
              repeats);
  std::printf("  %-31s %7s %8s %6s %7s %8s %9s %10s %10s %10s %7s %10s %7s\n", "scenario", "pg_read", "pg_write",
              "pg_rt", "commits", "http_get", "http_post", "mean_us", "p99_us", "floor_us", "ratio", "replay_us",
              "x_replay");
  BareReplay replay(stack.database_url(), stack.remote_url());
  PgWire all_wire;
  double all_mean_us = 0;
  double all_replay_us = 0;
  for (const auto& s : external_service_scenarios(scenario_dir)) {
    const auto f = run_scenario(s, remote, outbox, replay, repeats);
    all_wire.round_trips += f.wire.round_trips;
    all_wire.commits += f.wire.commits;
    all_mean_us += f.stats.mean();
    all_replay_us += f.replay.mean();
    const double implied = implied_floor_us(f.wire, f.counts, floor);
    std::printf("  %-31s %7d %8d %6llu %7llu %8d %9d %10.1f %10.1f %10.1f %6.2fx %10.1f %6.2fx\n", s.id.c_str(),
                f.counts[kPgRead], f.counts[kPgWrite], static_cast<unsigned long long>(f.wire.round_trips),
                static_cast<unsigned long long>(f.wire.commits), f.counts[kHttpGet], f.counts[kHttpPost],
                f.stats.mean(), f.stats.p99(), implied, f.stats.mean() / implied, f.replay.mean(),
                f.stats.mean() / f.replay.mean());
    // Where the time went: mean time per call of each kind, and what the
    // driver spent outside them (parsing, JSON, bookkeeping).
    const char* names[kKinds] = {"pg_read", "pg_write", "http_get", "http_post"};
    std::printf("    mean us per call:");
    double inside_us = 0;
    for (int k = 0; k < kKinds; ++k) {
      std::printf(" %s %.0f,", names[k], f.counts[k] ? f.total_times[k] / (f.counts[k] * repeats) : 0.0);
      inside_us += f.total_times[k] / repeats;
    }
    const double outside_us = f.stats.mean() - inside_us;
    std::printf(" outside calls %.0f (%.1f%%)\n", outside_us, 100.0 * outside_us / f.stats.mean());
  }
  std::printf(
      "  all scenarios: %llu PostgreSQL round trips, %llu of them commits; %.1f ms against %.1f ms replayed "
      "bare = %.2fx\n",
      static_cast<unsigned long long>(all_wire.round_trips), static_cast<unsigned long long>(all_wire.commits),
      all_mean_us / 1000.0, all_replay_us / 1000.0, all_mean_us / all_replay_us);
}

// Cells/s at 1, 2, 4 and 8 jobs on `stack`, each job on its own remote as
// `skewbench sweep` runs them (the stack has one remote per job, or the one
// external remote).
void sweep_throughput(const sweep::Grid& grid, const runner::Stack& stack, const char* label) {
  for (unsigned jobs : {1u, 2u, 4u, 8u}) {
    TempDir out("skewbench-bench-sweep");
    sweep::SweepSettings settings;
    settings.database_url = stack.database_url();
    settings.remote_urls = stack.remote_urls();
    settings.run_id = runner::new_run_id();
    settings.jobs = jobs;
    settings.progress = false;
    const auto outcome = sweep::run_cells(grid, settings, out.path());
    std::printf("  %-9s jobs %u: %llu cells in %.2f s = %.1f cells/s (%llu ERROR)\n", label, jobs,
                static_cast<unsigned long long>(outcome.cells_done), outcome.duration_s,
                static_cast<double>(outcome.cells_done) / outcome.duration_s,
                static_cast<unsigned long long>(outcome.errors));
  }
}

// Sweep throughput under each durability profile, side by side: each on a
// stack of its own (a cluster and 8 remote-effects started with that
// profile), unless the services were given by URL, which run as they are.
void bench_sweep(const std::string& grid_path, const std::optional<std::string>& database_url,
                 const std::optional<std::string>& remote_url, const runner::Stack& external) {
  const auto grid = sweep::Grid::load(grid_path);
  std::printf("\nsweep throughput: %s (%llu cells)\n", grid.id().c_str(),
              static_cast<unsigned long long>(grid.cell_count()));
  if (database_url || remote_url) {
    sweep_throughput(grid, external, "external");
    return;
  }
  for (const auto durability : {runner::Durability::durable, runner::Durability::throwaway}) {
    runner::StackOptions options;
    options.quiet = true;
    options.remote_instances = 8;
    options.durability = durability;
    runner::Stack stack(options);
    sweep_throughput(grid, stack, std::string(runner::to_string(durability)).c_str());
  }
}

void bench_rss(const std::string& skewbench_bin, const std::string& base_scenario, const runner::Stack& stack,
               const std::vector<long>& cell_counts) {
  std::printf("\npeak RSS of skewbench sweep (2 jobs)\n  %10s %12s %10s\n", "cells", "peak_rss_MiB", "seconds");
  std::fflush(stdout);
  for (const long n : cell_counts) {
    TempDir dir("skewbench-bench-rss");
    const auto grid_path = dir.path() / "grid.json";
    write_file_atomically(grid_path, bench::rss_grid(n, base_scenario).dump());
    const auto run = bench::run_measuring_rss({skewbench_bin, "sweep", grid_path.string(), "--out",
                                               (dir.path() / "out").string(), "--jobs", "2", "-q", "--database-url",
                                               stack.database_url(), "--remote-url", stack.remote_url()});
    std::printf("  %10ld %12.1f %10.1f%s\n", bench::rss_grid_cells(n), run.peak_rss_mib, run.seconds,
                run.exit_code == 0 ? "" : "  (sweep failed)");
  }
}

// Runs a child to its end with stdout and stderr on /dev/null; returns its
// exit code (-1 when it did not exit).
int run_quietly(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int null_fd = ::open("/dev/null", O_WRONLY);
    ::dup2(null_fd, STDOUT_FILENO);
    ::dup2(null_fd, STDERR_FILENO);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

struct PhaseStats {
  Stats version, whole, pg_connect, pg_first_statement, pg_outbox, http_connect, checks, services, scenarios, evidence;
};

// Times the phases app::run passes through, each from its start to the next's.
class PhaseTimer final : public app::Observer {
 public:
  explicit PhaseTimer(PhaseStats& stats) : stats_(stats), current_(&stats.checks), since_(Clock::now()) {}
  void say(const std::string& /*line*/) override {}
  void entering(app::Phase phase) override {
    close();
    current_ = phase == app::Phase::services    ? &stats_.services
               : phase == app::Phase::scenarios ? &stats_.scenarios
                                                : &stats_.evidence;
  }
  void close() {
    const auto now = Clock::now();
    if (current_) current_->samples_us.push_back(micros(now - since_));
    since_ = now;
    current_ = nullptr;
  }

 private:
  PhaseStats& stats_;
  Stats* current_;
  Clock::time_point since_;
};

// One in-process pass through what `skewbench run` does (app::run, each phase
// timed), after its parts alone: a bare PostgreSQL connect and first
// statement, an outbox open, an HTTP connect and GET /health.
void measure_phases_once(const std::vector<std::string>& paths, const runner::Stack& stack, PhaseStats& stats) {
  auto t = Clock::now();
  {
    pqxx::connection bare(infra::libpq_connection_string(stack.database_url(), 30));
    stats.pg_connect.samples_us.push_back(micros(Clock::now() - t));
    // What a new backend's first statement costs, whatever it asks: the
    // server loads its caches for it.
    t = Clock::now();
    pqxx::nontransaction tx(bare);
    infra::pq::exec0(tx, "SELECT 1");
    stats.pg_first_statement.samples_us.push_back(micros(Clock::now() - t));
  }
  t = Clock::now();
  { infra::PgOutbox outbox(stack.database_url(), runner::new_run_id()); }
  stats.pg_outbox.samples_us.push_back(micros(Clock::now() - t));
  t = Clock::now();
  infra::HttpRemote(stack.remote_url()).health();
  stats.http_connect.samples_us.push_back(micros(Clock::now() - t));
  TempDir dir("skewbench-bench-evidence");
  app::RunRequest request{.paths = paths, .out_dir = (dir.path() / "out").string(), .services = {}, .overwrite = false};
  request.services.database_url = stack.database_url();
  request.services.remote_url = stack.remote_url();
  request.services.quiet = true;
  const std::atomic<bool> never{false};
  PhaseTimer timer(stats);
  const auto outcome = app::run(request, never, timer);
  timer.close();
  if (outcome.exit_code != 0) throw std::runtime_error("app::run exited " + std::to_string(outcome.exit_code));
}

// `skewbench run` as a whole process against running services, next to
// `skewbench --version`, and the same phases timed one by one in-process.
void bench_process(const std::string& skewbench_bin, const std::string& scenario_dir, const runner::Stack& stack,
                   int runs) {
  const auto scenarios = external_service_scenarios(scenario_dir);
  std::vector<std::string> run_argv = {skewbench_bin, "run"};
  for (const auto& s : scenarios) run_argv.push_back(s.source);
  for (const char* a : {"-q", "--database-url"}) run_argv.emplace_back(a);
  run_argv.push_back(stack.database_url());
  run_argv.emplace_back("--remote-url");
  run_argv.push_back(stack.remote_url());
  run_argv.emplace_back("--out");
  PhaseStats stats;
  std::vector<std::string> paths;
  for (const auto& s : scenarios) paths.push_back(s.source);
  for (int i = 0; i < runs; ++i) {
    auto t = Clock::now();
    run_quietly({skewbench_bin, "--version"});
    stats.version.samples_us.push_back(micros(Clock::now() - t));
    TempDir dir("skewbench-bench-process");
    auto argv = run_argv;
    argv.push_back((dir.path() / "out").string());
    t = Clock::now();
    const int code = run_quietly(argv);
    stats.whole.samples_us.push_back(micros(Clock::now() - t));
    if (code != 0) {
      std::fprintf(stderr, "skewbench run exited %d\n", code);
      std::exit(3);
    }
    measure_phases_once(paths, stack, stats);
  }
  std::printf("\nskewbench run, %zu scenarios needing no service control, external services, %d runs\n",
              scenarios.size(), runs);
  std::printf("  %-46s %10s %10s\n", "phase", "median_us", "mean_us");
  const std::pair<const char*, const Stats*> rows[] = {
      {"whole process: skewbench run", &stats.whole},
      {"bare process start: skewbench --version", &stats.version},
      {"in-process: PostgreSQL connect (libpq only)", &stats.pg_connect},
      {"in-process: then SELECT 1 (a new backend's first)", &stats.pg_first_statement},
      {"in-process: outbox open (connect + schema check)", &stats.pg_outbox},
      {"in-process: HTTP connect + GET /health", &stats.http_connect},
      {"app::run: checks (files, flags, --out lock)", &stats.checks},
      {"app::run: services (outbox open, /health)", &stats.services},
      {"app::run: the scenarios", &stats.scenarios},
      {"app::run: evidence (write, fsync, publish)", &stats.evidence}};
  for (const auto& [label, s] : rows) std::printf("  %-46s %10.0f %10.0f\n", label, s->median(), s->mean());
  const double outside = stats.whole.median() - stats.version.median() - stats.scenarios.median();
  std::printf("  %-46s %10.0f\n", "outside scenarios and process start (median)", outside);
  std::printf("  %-46s %10.0f\n", "  of which schema check (outbox open - connect)",
              stats.pg_outbox.median() - stats.pg_connect.median());
}

// The series as a user runs it, services started by skewbench, in each clock
// mode; runs of the two modes interleave, so a slower moment of the machine
// falls on both.
void bench_clock_modes(const std::string& skewbench_bin, const std::string& scenario_dir, int runs) {
  const std::array<const char*, 2> modes = {"logical", "real"};
  std::array<Stats, 2> wall;
  for (int i = 0; i < runs; ++i) {
    for (std::size_t m = 0; m < modes.size(); ++m) {
      TempDir dir("skewbench-bench-clock");
      const auto t = Clock::now();
      const int code = run_quietly(
          {skewbench_bin, "run", scenario_dir, "-q", "--clock-mode", modes[m], "--out", (dir.path() / "out").string()});
      wall[m].samples_us.push_back(micros(Clock::now() - t));
      if (code != 0) {
        std::fprintf(stderr, "skewbench run --clock-mode %s exited %d\n", modes[m], code);
        std::exit(3);
      }
    }
  }
  std::printf("\nskewbench run scenarios/ (every scenario, services started by it), %d runs per clock mode\n", runs);
  std::printf("  %-14s %12s %12s %12s\n", "clock mode", "median_ms", "min_ms", "max_ms");
  for (std::size_t m = 0; m < modes.size(); ++m) {
    const auto [lo, hi] = std::minmax_element(wall[m].samples_us.begin(), wall[m].samples_us.end());
    std::printf("  %-14s %12.0f %12.0f %12.0f\n", modes[m], wall[m].median() / 1000, *lo / 1000, *hi / 1000);
  }
  std::printf("  real / logical (medians): %.2f\n", wall[1].median() / wall[0].median());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_skewbench: scenario and sweep cost against the round-trip floor, and sweep memory"};
  int floor_iterations = 500;
  int repeats = 50;
  std::vector<long> rss_cells = {1000, 10000};
  bool skip_sweep = false;
  int process_runs = 20;
  std::optional<std::string> database_url;
  std::optional<std::string> remote_url;
  std::string skewbench_bin = SKEWBENCH_CLI_BIN;
  app.add_option("--floor-iterations", floor_iterations, "round trips per floor figure")->check(CLI::PositiveNumber);
  app.add_option("--repeats", repeats, "runs of each #018 scenario")->check(CLI::PositiveNumber);
  app.add_option("--rss-cells", rss_cells, "cell counts for the RSS sweep (e.g. 1000 10000 100000)");
  app.add_option("--process-runs", process_runs, "whole-process runs of skewbench run")->check(CLI::PositiveNumber);
  app.add_flag("--skip-sweep", skip_sweep, "skip the sweep throughput and RSS parts");
  int clock_mode_runs = 3;
  app.add_option("--clock-mode-runs", clock_mode_runs,
                 "runs of the whole series in each clock mode, services started by skewbench (0: skip)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--database-url", database_url, "PostgreSQL URL (default: a throwaway cluster)");
  app.add_option("--remote-url", remote_url, "remote-effect URL (default: start one)");
  app.add_option("--skewbench-bin", skewbench_bin, "skewbench executable for the RSS part");
  CLI11_PARSE(app, argc, argv);

  try {
    runner::Stack stack({.database_url = database_url, .remote_url = remote_url, .remote_sync = "full", .quiet = true});
    infra::PgOutbox outbox(stack.database_url(), runner::new_run_id());
    infra::HttpRemote remote(stack.remote_url());
    const auto health = remote.health().body;
    std::printf("bench_skewbench  harness %s (%s, %s)  PostgreSQL %s  remote-effect sync %s, SQLite %s  %u CPUs\n",
                build_info::kVersion, build_info::kGitCommit, build_info::kBuildType,
                outbox.info().server_version.c_str(), health.value("sync", "?").c_str(),
                health.value("sqlite_version", "?").c_str(), std::thread::hardware_concurrency());
    if (build_info::kIsDebugBuild)
      std::printf("***WARNING*** harness built as Debug: figures are not representative\n");
    const auto floor = measure_floor(stack.database_url(), stack.remote_url(), floor_iterations);
    measure_adapter_read(outbox, floor_iterations);
    const std::string scenario_dir = std::string(SKEWBENCH_SOURCE_DIR) + "/scenarios";
    bench_process(skewbench_bin, scenario_dir, stack, process_runs);
    bench_scenarios(scenario_dir, stack, remote, outbox, repeats, floor);
    if (clock_mode_runs > 0) bench_clock_modes(skewbench_bin, scenario_dir, clock_mode_runs);
    if (!skip_sweep) {
      bench_sweep(std::string(SKEWBENCH_SOURCE_DIR) + "/scenarios/sweeps/018-offset-by-epsilon.json", database_url,
                  remote_url, stack);
      bench_rss(skewbench_bin, std::string(SKEWBENCH_SOURCE_DIR) + "/scenarios/sweeps/018-base.json", stack, rss_cells);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_skewbench: %s\n", e.what());
    return 3;
  }
  return 0;
}
