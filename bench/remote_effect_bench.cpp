// bench_remote_effect: throughput and latency of POST /effects on the real
// remote-effect binary, next to the bare SQLite commit floor measured in the
// same run on the same filesystem.
//
// For each --sync mode the service is started once; for each client count N,
// N threads each hold one keep-alive connection (TCP_NODELAY) and send
// --requests-per-client POSTs with a fresh operation id and key each, so every
// request is an `applied` write. The floor is one INSERT per transaction in a
// WAL database at synchronous FULL and NORMAL. The overhead ratio divides the
// service's one-client p50 latency by the floor's p50 commit time; "x floor"
// divides the service's requests/s by the floor's commits/s. POSTs/commit is
// how many POSTs the service committed per transaction (group commit), from
// the post_commits counter of its /health before and after each run.
//
// GET /health is timed on state files already holding --health-records key
// records each: the service creates its file, the records are inserted behind
// it in one transaction, and it is started again on that file. Every scenario
// skewbench runs asks /health once, so its cost must not grow with the file.
//
// Wall-clock time appears here only to measure; no decision depends on it.

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <sqlite3.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <skewbench/build_info.hpp>

#include "common/files.hpp"
#include "remote_effect/launcher.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

struct Latencies {
  std::vector<double> samples_us;

  // Nearest-rank percentile.
  double percentile(double p) const {
    if (samples_us.empty()) return 0.0;
    std::vector<double> sorted = samples_us;
    std::sort(sorted.begin(), sorted.end());
    const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
    return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
  }
};

struct ServiceRun {
  std::string sync;
  int clients = 0;
  int requests = 0;
  int errors = 0;
  double seconds = 0.0;
  Latencies latency;
  std::optional<std::int64_t> commits;  // transactions the service committed; unknown for an older binary
  double requests_per_s() const { return seconds > 0 ? requests / seconds : 0.0; }
  std::optional<double> posts_per_commit() const {
    if (!commits || *commits <= 0) return std::nullopt;
    return static_cast<double>(requests - errors) / static_cast<double>(*commits);
  }
};

struct FloorRun {
  std::string sync;
  int commits = 0;
  double seconds = 0.0;
  Latencies latency;
  double commits_per_s() const { return seconds > 0 ? commits / seconds : 0.0; }
};

double micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

ServiceRun drive_service(const std::string& base_url, const std::string& sync, int clients, int requests_per_client) {
  ServiceRun run;
  run.sync = sync;
  run.clients = clients;
  run.requests = clients * requests_per_client;

  std::barrier start(clients);
  std::vector<std::vector<double>> per_thread(static_cast<std::size_t>(clients));
  std::vector<int> errors(static_cast<std::size_t>(clients), 0);
  std::vector<Clock::time_point> begun(static_cast<std::size_t>(clients));
  std::vector<Clock::time_point> ended(static_cast<std::size_t>(clients));
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      const auto slot = static_cast<std::size_t>(c);
      httplib::Client client(base_url);
      client.set_keep_alive(true);
      client.set_tcp_nodelay(true);
      client.set_read_timeout(std::chrono::seconds(30));
      if (!client.Get("/health")) ++errors[slot];  // connection open before the clock starts
      per_thread[slot].reserve(static_cast<std::size_t>(requests_per_client));
      start.arrive_and_wait();
      begun[slot] = Clock::now();
      for (int i = 0; i < requests_per_client; ++i) {
        const std::string id =
            "bench-" + sync + "-" + std::to_string(clients) + "-" + std::to_string(c) + "-" + std::to_string(i);
        const httplib::Headers headers = {{"X-Operation-Id", id},
                                          {"Idempotency-Key", id},
                                          {"X-Logical-Time", std::to_string(i)},
                                          {"X-Idempotency-TTL", "60"}};
        const auto t0 = Clock::now();
        const auto result = client.Post("/effects", headers, "{}", "application/json");
        const auto t1 = Clock::now();
        if (!result || result->status != 200) {
          ++errors[slot];
          continue;
        }
        per_thread[slot].push_back(micros(t1 - t0));
      }
      ended[slot] = Clock::now();
    });
  }
  for (auto& thread : threads) thread.join();

  const auto first = *std::min_element(begun.begin(), begun.end());
  const auto last = *std::max_element(ended.begin(), ended.end());
  run.seconds = std::chrono::duration<double>(last - first).count();
  for (std::size_t c = 0; c < per_thread.size(); ++c) {
    run.errors += errors[c];
    run.latency.samples_us.insert(run.latency.samples_us.end(), per_thread[c].begin(), per_thread[c].end());
  }
  return run;
}

// The service's post_commits counter, when its /health reports one.
std::optional<std::int64_t> post_commits(const std::string& base_url) {
  httplib::Client client(base_url);
  client.set_tcp_nodelay(true);
  const auto result = client.Get("/health");
  if (!result || result->status != 200) return std::nullopt;
  const auto health = json::parse(result->body, nullptr, false);
  if (!health.is_object() || !health.contains("post_commits")) return std::nullopt;
  return health["post_commits"].get<std::int64_t>();
}

void sqlite_exec(sqlite3* db, const char* sql) {
  char* message = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &message) != SQLITE_OK) {
    const std::string text = message ? message : "unknown error";
    sqlite3_free(message);
    throw std::runtime_error(std::string("SQLite: ") + text + " in " + sql);
  }
}

struct HealthRun {
  std::int64_t records = 0;
  std::optional<std::int64_t> reported;  // durable_idempotency_records, as /health said
  Latencies latency;
};

// GET /health, `requests` times on one keep-alive connection, on a state file
// holding `records` key records. The service makes its own schema first, so any
// build (an older one through --binary included) reads a file it knows.
HealthRun measure_health(const std::string& binary, const std::filesystem::path& dir, std::int64_t records,
                         int requests) {
  skewbench::remote_effect::LaunchOptions launch;
  launch.binary = binary;
  launch.state_db = dir / ("health-" + std::to_string(records) + ".db");
  launch.sync = "normal";
  launch.stderr_path = (dir / ("health-" + std::to_string(records) + ".log")).string();
  skewbench::remote_effect::RemoteEffectProcess service(launch);
  if (service.stop() != 0) throw std::runtime_error("remote-effect did not stop cleanly after creating its schema");
  {
    sqlite3* db = nullptr;
    if (sqlite3_open(launch.state_db.c_str(), &db) != SQLITE_OK) {
      sqlite3_close(db);
      throw std::runtime_error("cannot open " + launch.state_db.string());
    }
    const std::string sql =
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < " + std::to_string(records) +
        ") INSERT INTO idempotency_records(idempotency_key, operation_id, created_at, expires_at, body_sha256) "
        "SELECT 'health-' || i, 'health-op-' || i, 0, 60, '' FROM n";
    try {
      sqlite_exec(db, "BEGIN");
      if (records > 0) sqlite_exec(db, sql.c_str());
      sqlite_exec(db, "COMMIT");
    } catch (...) {
      sqlite3_close(db);
      throw;
    }
    sqlite3_close(db);
  }
  service.restart();
  HealthRun run;
  run.records = records;
  httplib::Client client(service.base_url());
  client.set_keep_alive(true);
  client.set_tcp_nodelay(true);
  for (int i = 0; i < requests; ++i) {
    const auto t0 = Clock::now();
    const auto result = client.Get("/health");
    const auto t1 = Clock::now();
    if (!result || result->status != 200) throw std::runtime_error("GET /health failed");
    run.latency.samples_us.push_back(micros(t1 - t0));
    if (i == 0) {
      const auto health = json::parse(result->body, nullptr, false);
      if (health.is_object() && health.contains("durable_idempotency_records") &&
          health["durable_idempotency_records"].is_number_integer()) {
        run.reported = health["durable_idempotency_records"].get<std::int64_t>();
      }
    }
  }
  if (service.stop() != 0) throw std::runtime_error("remote-effect did not stop cleanly");
  return run;
}

// One INSERT in its own transaction, `commits` times, on a fresh WAL file.
FloorRun measure_floor(const std::filesystem::path& path, const std::string& sync, int commits) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
    throw std::runtime_error("cannot open " + path.string());
  }
  FloorRun run;
  run.sync = sync;
  run.commits = commits;
  sqlite3_stmt* insert = nullptr;
  try {
    sqlite_exec(db, "PRAGMA journal_mode = WAL");
    sqlite_exec(db, sync == "full" ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL");
    sqlite_exec(db,
                "CREATE TABLE IF NOT EXISTS floor (id INTEGER PRIMARY KEY AUTOINCREMENT,"
                " k TEXT NOT NULL, t INTEGER NOT NULL)");
    if (sqlite3_prepare_v2(db, "INSERT INTO floor(k, t) VALUES (?1, ?2)", -1, &insert, nullptr) != SQLITE_OK) {
      throw std::runtime_error(sqlite3_errmsg(db));
    }
    const auto start = Clock::now();
    for (int i = 0; i < commits; ++i) {
      const std::string key = "floor-" + std::to_string(i);
      const auto t0 = Clock::now();
      sqlite_exec(db, "BEGIN IMMEDIATE");
      sqlite3_bind_text(insert, 1, key.c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_int64(insert, 2, i);
      if (sqlite3_step(insert) != SQLITE_DONE) throw std::runtime_error(sqlite3_errmsg(db));
      sqlite3_reset(insert);
      sqlite_exec(db, "COMMIT");
      run.latency.samples_us.push_back(micros(Clock::now() - t0));
    }
    run.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  } catch (...) {
    sqlite3_finalize(insert);
    sqlite3_close(db);
    throw;
  }
  sqlite3_finalize(insert);
  sqlite3_close(db);
  return run;
}

std::string filesystem_type(const std::filesystem::path& path) {
  struct statfs info {};
  if (::statfs(path.c_str(), &info) != 0) return "unknown";
  switch (static_cast<unsigned long>(info.f_type)) {
    case 0xEF53:
      return "ext4";
    case 0x01021994:
      return "tmpfs";
    case 0x58465342:
      return "xfs";
    case 0x9123683E:
      return "btrfs";
    case 0x794c7630:
      return "overlayfs";
    default: {
      std::ostringstream out;
      out << "0x" << std::hex << info.f_type;
      return out.str();
    }
  }
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

std::string host_name() {
  char buffer[256] = {};
  return ::gethostname(buffer, sizeof(buffer) - 1) == 0 ? buffer : "unknown";
}

std::string fixed(double value, int decimals) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.*f", decimals, value);
  return buffer;
}

std::vector<int> parse_clients(const std::string& text) {
  std::vector<int> clients;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    std::size_t used = 0;
    const int n = std::stoi(item, &used);
    if (used != item.size() || n < 1 || n > 256) throw CLI::ValidationError("--clients", item);
    clients.push_back(n);
  }
  if (clients.empty()) throw CLI::ValidationError("--clients", "empty list");
  return clients;
}

struct BenchArgs {
  std::string binary = SKEWBENCH_REMOTE_EFFECT_BIN;
  int requests_per_client = 1000;
  std::vector<int> clients;
  std::vector<std::string> syncs = {"full", "normal"};
  int floor_commits = 1000;
  std::string state_dir;
  std::vector<std::int64_t> health_records = {0, 100'000};
  bool as_json = false;
};

// Parses the command line into `args`; returns an exit code when the program
// should stop (--help, or bad arguments), else nullopt.
std::optional<int> parse_args(int argc, char** argv, BenchArgs& args) {
  CLI::App app{"Throughput and latency of remote-effect POST /effects, with the SQLite floor", "bench_remote_effect"};
  std::string clients_text = "1,2,8";
  app.add_option("--binary", args.binary, "The remote-effect executable")->capture_default_str();
  app.add_option("--requests-per-client", args.requests_per_client, "POSTs sent by each client")
      ->capture_default_str()
      ->check(CLI::Range(1, 10'000'000));
  app.add_option("--clients", clients_text, "Comma-separated client counts")->capture_default_str();
  app.add_option("--sync", args.syncs, "Sync modes to measure")
      ->capture_default_str()
      ->check(CLI::IsMember({"full", "normal"}));
  app.add_option("--floor-commits", args.floor_commits, "Commits for the bare SQLite floor")
      ->capture_default_str()
      ->check(CLI::Range(1, 10'000'000));
  app.add_option("--state-dir", args.state_dir,
                 "Directory for the state files (default: TMPDIR or /tmp); its filesystem is "
                 "what the figures measure");
  app.add_option("--health-records", args.health_records,
                 "Key records in the state file for the GET /health timing (e.g. 0 100000)")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{100'000'000}));
  app.add_flag("--json", args.as_json, "Print one JSON document instead of the table");
  try {
    app.parse(argc, argv);
    args.clients = parse_clients(clients_text);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::cerr << "bench_remote_effect: " << e.what() << std::endl;
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "bench_remote_effect: --clients: " << e.what() << std::endl;
    return 2;
  }
  return std::nullopt;
}

// Everything one run measured.
struct Measurements {
  std::string fs_type;
  std::vector<ServiceRun> service;
  std::vector<HealthRun> health;
  std::vector<FloorRun> floor;

  std::optional<double> floor_p50(const std::string& sync) const {
    for (const auto& f : floor) {
      if (f.sync == sync) return f.latency.percentile(50);
    }
    return std::nullopt;
  }
  // The service's requests/s over the floor's commits/s at the same sync mode.
  std::optional<double> over_floor_rate(const ServiceRun& run) const {
    for (const auto& f : floor) {
      if (f.sync == run.sync && f.commits_per_s() > 0) return run.requests_per_s() / f.commits_per_s();
    }
    return std::nullopt;
  }
};

// One service per sync mode, driven at every client count.
std::vector<ServiceRun> measure_services(const BenchArgs& args, const std::filesystem::path& dir) {
  std::vector<ServiceRun> runs;
  for (const auto& sync : args.syncs) {
    skewbench::remote_effect::LaunchOptions launch;
    launch.binary = args.binary;
    launch.state_db = dir / ("service-" + sync + ".db");
    launch.sync = sync;
    launch.stderr_path = (dir / ("service-" + sync + ".log")).string();
    skewbench::remote_effect::RemoteEffectProcess service(launch);
    for (const int n : args.clients) {
      const auto commits_before = post_commits(service.base_url());
      runs.push_back(drive_service(service.base_url(), sync, n, args.requests_per_client));
      const auto commits_after = post_commits(service.base_url());
      if (commits_before && commits_after) runs.back().commits = *commits_after - *commits_before;
    }
    if (const int code = service.stop(); code != 0) {
      throw std::runtime_error("remote-effect (--sync " + sync + ") exited with code " + std::to_string(code));
    }
  }
  return runs;
}

Measurements measure(BenchArgs args, const std::filesystem::path& dir) {
  Measurements m;
  m.fs_type = filesystem_type(dir);
  m.service = measure_services(args, dir);
  std::sort(args.health_records.begin(), args.health_records.end());
  args.health_records.erase(std::unique(args.health_records.begin(), args.health_records.end()),
                            args.health_records.end());
  for (const auto records : args.health_records) m.health.push_back(measure_health(args.binary, dir, records, 200));
  for (const auto& sync : args.syncs) {
    m.floor.push_back(measure_floor(dir / ("floor-" + sync + ".db"), sync, args.floor_commits));
  }
  return m;
}

// What makes the figures doubtful; counts the failed requests into `errors`.
std::vector<std::string> warnings_of(const Measurements& m, int& errors) {
  std::vector<std::string> warnings;
  if (skewbench::build_info::kIsDebugBuild) warnings.push_back("this is a Debug build: timings are not representative");
  if (m.fs_type == "tmpfs") {
    warnings.push_back("the state directory is on tmpfs: fsync costs nothing, so the floor is not a disk floor");
  }
  errors = 0;
  for (const auto& run : m.service) errors += run.errors;
  for (const auto& run : m.health) {
    if (run.reported && *run.reported != run.records) {
      ++errors;
      warnings.push_back("/health reported " + std::to_string(*run.reported) + " key records for a file holding " +
                         std::to_string(run.records));
    }
  }
  if (errors > 0) warnings.push_back(std::to_string(errors) + " requests failed; their latencies are excluded");
  return warnings;
}

json or_null(const std::optional<double>& value) { return value ? json(*value) : json(nullptr); }

json context_json(const BenchArgs& args, const Measurements& m) {
  return {{"json_schema_version", 1},
          {"date_utc", utc_now()},
          {"host", host_name()},
          {"cpus", std::thread::hardware_concurrency()},
          {"harness_version", skewbench::build_info::kVersion},
          {"git_commit", skewbench::build_info::kGitCommit},
          {"build_type", skewbench::build_info::kBuildType},
          {"sqlite_version", sqlite3_libversion()},
          {"httplib_version", CPPHTTPLIB_VERSION},
          {"state_filesystem", m.fs_type},
          {"requests_per_client", args.requests_per_client},
          {"floor_commits", args.floor_commits}};
}

void print_json(const BenchArgs& args, const Measurements& m, const std::vector<std::string>& warnings) {
  json out = {{"context", context_json(args, m)},
              {"service", json::array()},
              {"sqlite_floor", json::array()},
              {"warnings", warnings}};
  json overhead = json::object();
  for (const auto& run : m.service) {
    out["service"].push_back({{"sync", run.sync},
                              {"clients", run.clients},
                              {"requests", run.requests},
                              {"errors", run.errors},
                              {"seconds", run.seconds},
                              {"requests_per_s", run.requests_per_s()},
                              {"p50_us", run.latency.percentile(50)},
                              {"p99_us", run.latency.percentile(99)},
                              {"requests_per_s_over_floor", or_null(m.over_floor_rate(run))},
                              {"posts_per_commit", or_null(run.posts_per_commit())}});
    const auto floor = m.floor_p50(run.sync);
    if (run.clients == 1 && floor && *floor > 0) overhead[run.sync] = run.latency.percentile(50) / *floor;
  }
  for (const auto& run : m.floor) {
    out["sqlite_floor"].push_back({{"sync", run.sync},
                                   {"commits", run.commits},
                                   {"commits_per_s", run.commits_per_s()},
                                   {"p50_us", run.latency.percentile(50)},
                                   {"p99_us", run.latency.percentile(99)}});
  }
  out["overhead_p50_1_client_over_floor"] = overhead;
  out["health"] = json::array();
  for (const auto& run : m.health) {
    out["health"].push_back({{"records", run.records},
                             {"reported_records", run.reported ? json(*run.reported) : json(nullptr)},
                             {"p50_us", run.latency.percentile(50)},
                             {"p99_us", run.latency.percentile(99)}});
  }
  std::cout << out.dump(2) << std::endl;
}

void print_service_table(const Measurements& m) {
  std::printf(
      "remote-effect POST /effects  (harness %s, commit %s, %s; SQLite %s; "
      "cpp-httplib %s; %u CPUs; state on %s)\n",
      skewbench::build_info::kVersion, skewbench::build_info::kGitCommit, skewbench::build_info::kBuildType,
      sqlite3_libversion(), CPPHTTPLIB_VERSION, std::thread::hardware_concurrency(), m.fs_type.c_str());
  std::printf("%-7s %7s %9s %7s %10s %8s %9s %9s %12s\n", "sync", "clients", "requests", "errors", "req/s", "x floor",
              "p50_us", "p99_us", "POSTs/commit");
  for (const auto& run : m.service) {
    const auto ratio = m.over_floor_rate(run);
    const auto per_commit = run.posts_per_commit();
    std::printf("%-7s %7d %9d %7d %10.0f %8s %9.0f %9.0f %12s\n", run.sync.c_str(), run.clients, run.requests,
                run.errors, run.requests_per_s(), ratio ? fixed(*ratio, 2).c_str() : "-", run.latency.percentile(50),
                run.latency.percentile(99), per_commit ? fixed(*per_commit, 1).c_str() : "-");
  }
}

void print_tables(const Measurements& m, const std::vector<std::string>& warnings) {
  for (const auto& warning : warnings) std::cout << "***WARNING*** " << warning << "\n";
  print_service_table(m);
  std::printf("\nSQLite commit floor (one INSERT per transaction, WAL, same filesystem)\n");
  std::printf("%-7s %7s %10s %9s %9s\n", "sync", "commits", "commits/s", "p50_us", "p99_us");
  for (const auto& run : m.floor) {
    std::printf("%-7s %7d %10.0f %9.0f %9.0f\n", run.sync.c_str(), run.commits, run.commits_per_s(),
                run.latency.percentile(50), run.latency.percentile(99));
  }
  std::printf("\nOverhead above the floor (service p50 at 1 client / floor p50):\n");
  for (const auto& run : m.service) {
    const auto floor = m.floor_p50(run.sync);
    if (run.clients == 1 && floor && *floor > 0) {
      std::printf("  %-7s %.2fx  (%.0f us vs %.0f us)\n", run.sync.c_str(), run.latency.percentile(50) / *floor,
                  run.latency.percentile(50), *floor);
    }
  }
  std::printf("\nGET /health on a state file holding N key records (200 requests, one keep-alive connection)\n");
  std::printf("%10s %10s %9s %9s\n", "records", "reported", "p50_us", "p99_us");
  for (const auto& run : m.health) {
    std::printf("%10lld %10s %9.0f %9.0f\n", static_cast<long long>(run.records),
                run.reported ? std::to_string(*run.reported).c_str() : "-", run.latency.percentile(50),
                run.latency.percentile(99));
  }
}

}  // namespace

int main(int argc, char** argv) {
  BenchArgs args;
  if (const auto code = parse_args(argc, argv, args)) return *code;
  if (!args.state_dir.empty()) ::setenv("TMPDIR", args.state_dir.c_str(), 1);
  try {
    skewbench::TempDir dir("remote-effect-bench");
    const auto m = measure(args, dir.path());
    int errors = 0;
    const auto warnings = warnings_of(m, errors);
    if (args.as_json) {
      print_json(args, m, warnings);
    } else {
      print_tables(m, warnings);
    }
    return errors > 0 ? 1 : 0;
  } catch (const std::exception& e) {
    std::cerr << "bench_remote_effect: " << e.what() << std::endl;
    return 1;
  }
}
