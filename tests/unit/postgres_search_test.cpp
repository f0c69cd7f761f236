// Which PostgreSQL binaries a throwaway cluster runs on: the order of
// preference over fake bin directories, and what the evidence records of them.

#include <map>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "common/errors.hpp"
#include "common/files.hpp"
#include "evidence/evidence.hpp"
#include "infra/postgres_cluster.hpp"

using namespace skewbench;
using Catch::Matchers::ContainsSubstring;
namespace fs = std::filesystem;

namespace {

// A temporary tree of bin directories, each holding empty initdb, pg_ctl and
// postgres files, with the `postgres --version` line each one answers.
class FakeInstalls {
 public:
  FakeInstalls() : root_("skewbench-pgsearch") {}

  fs::path add(const std::string& name, const std::string& version) {
    const auto bin = root_.path() / name / "bin";
    fs::create_directories(bin);
    for (const char* exe : {"initdb", "pg_ctl", "postgres"}) write_file_atomically(bin / exe, "");
    versions_[bin] = version;
    return bin;
  }

  // A cache directory (the parent of bin) with its completion marker.
  fs::path add_cache(const std::string& version) {
    const auto cache = add("cache/postgresql-17.6.0", version).parent_path();
    write_file_atomically(cache / infra::kCachedPostgresMarker, "sha512-x");
    return cache;
  }

  fs::path missing(const std::string& name) const { return root_.path() / name; }

  infra::PostgresSearch search(infra::PostgresSearch base) const {
    base.version_of = [versions = versions_](const fs::path& bin) {
      const auto it = versions.find(bin);
      return it == versions.end() ? std::string() : it->second;
    };
    return base;
  }

 private:
  TempDir root_;
  std::map<fs::path, std::string> versions_;
};

const std::string k15 = "postgres (PostgreSQL) 15.14 (Debian 15.14-0+deb12u1)";
const std::string k16 = "postgres (PostgreSQL) 16.10";
const std::string k17 = "postgres (PostgreSQL) 17.6";

}  // namespace

TEST_CASE("the flag wins over the environment, the cache and the system") {
  FakeInstalls fake;
  const auto flag = fake.add("flag", k16);
  const auto env = fake.add("env", k15);
  const auto cache = fake.add_cache(k17);
  const auto system = fake.add("system17", k17);
  const auto chosen =
      infra::find_postgres_binaries(fake.search({.flag = flag, .env = env, .cache = cache, .system = {system}}));
  CHECK(chosen.bin_dir == flag);
  CHECK(chosen.source == "flag");
  CHECK(chosen.version == k16);
}

TEST_CASE("the environment variable wins over the cache and the system") {
  FakeInstalls fake;
  const auto env = fake.add("env", k15);
  const auto chosen = infra::find_postgres_binaries(
      fake.search({.env = env, .cache = fake.add_cache(k17), .system = {fake.add("system17", k17)}}));
  CHECK(chosen.bin_dir == env);
  CHECK(chosen.source == "env");
}

TEST_CASE("the cached 17.6 wins over every system server") {
  FakeInstalls fake;
  const auto cache = fake.add_cache(k17);
  const auto chosen =
      infra::find_postgres_binaries(fake.search({.cache = cache, .system = {fake.add("system17", k17)}}));
  CHECK(chosen.bin_dir == cache / "bin");
  CHECK(chosen.source == "cache");
  CHECK(chosen.version == k17);
}

TEST_CASE("a cache without its marker or without a binary is passed over for the system server") {
  FakeInstalls fake;
  const auto cache = fake.add_cache(k17);
  const auto system = fake.add("system15", k15);
  SECTION("marker missing (an interrupted install)") { fs::remove(cache / infra::kCachedPostgresMarker); }
  SECTION("postgres missing") { fs::remove(cache / "bin" / "postgres"); }
  const auto chosen = infra::find_postgres_binaries(fake.search({.cache = cache, .system = {system}}));
  CHECK(chosen.bin_dir == system);
  CHECK(chosen.source == "system");
}

TEST_CASE("a complete cache whose postgres does not run is an error, not a silent fallback") {
  FakeInstalls fake;
  const auto cache = fake.add_cache("");
  CHECK_THROWS_WITH(infra::find_postgres_binaries(fake.search({.cache = cache, .system = {fake.add("s", k15)}})),
                    ContainsSubstring(cache.string()) && ContainsSubstring("does not run"));
}

TEST_CASE("among system servers PostgreSQL 17 comes first, else pg_config's, else the newest") {
  FakeInstalls fake;
  const auto pg_config15 = fake.add("pg_config", k15);
  const auto debian17 = fake.add("17", k17);
  const auto debian16 = fake.add("16", k16);
  CHECK(infra::find_postgres_binaries(fake.search({.system = {pg_config15, debian17, debian16}})).bin_dir == debian17);
  CHECK(infra::find_postgres_binaries(fake.search({.system = {pg_config15, debian16}})).bin_dir == pg_config15);
  // A directory without the binaries, or whose postgres does not run, is skipped.
  CHECK(infra::find_postgres_binaries(fake.search({.system = {fake.missing("x"), fake.add("broken", ""), debian16}}))
            .bin_dir == debian16);
}

TEST_CASE("an explicit directory without the binaries is an error naming where it came from") {
  FakeInstalls fake;
  const auto system = fake.add("system", k17);
  CHECK_THROWS_WITH(infra::find_postgres_binaries(fake.search({.flag = fake.missing("nope"), .system = {system}})),
                    ContainsSubstring("--postgres-bin " + fake.missing("nope").string()));
  CHECK_THROWS_WITH(infra::find_postgres_binaries(fake.search(
                        {.env = fake.missing("nope"), .env_name = "SKEWBENCH_PG_BINDIR", .system = {system}})),
                    ContainsSubstring("SKEWBENCH_PG_BINDIR=" + fake.missing("nope").string()));
  CHECK_THROWS_WITH(infra::find_postgres_binaries(fake.search({.flag = fake.add("silent", "")})),
                    ContainsSubstring("postgres --version fails"));
}

TEST_CASE("with no server anywhere the error says how to get one") {
  FakeInstalls fake;
  CHECK_THROWS_AS(infra::find_postgres_binaries(fake.search({.system = {fake.missing("a")}})), InfrastructureError);
  CHECK_THROWS_WITH(infra::find_postgres_binaries(fake.search({})), ContainsSubstring("--database-url"));
}

TEST_CASE("the major release is read from postgres --version") {
  CHECK(infra::postgres_major_of(k17) == 17);
  CHECK(infra::postgres_major_of(k15) == 15);
  CHECK(infra::postgres_major_of("postgres (PostgreSQL) 9.6.24") == 9);
  CHECK(infra::postgres_major_of("") == 0);
  CHECK(infra::postgres_major_of("not postgres 17") == 0);
}

TEST_CASE("the environment records the binaries a started cluster ran on, and nothing for an external one") {
  const infra::PostgresBinaries binaries{.bin_dir = "/c/postgresql-17.6.0/bin", .source = "cache", .version = k17};
  infra::PostgresInfo pg17;
  pg17.server_version = "17.6";
  pg17.server_version_num = 170006;
  const auto embedded = evidence::describe_environment(
      "r1", {.database = infra::describe_database(pg17, "postgresql://postgres@127.0.0.1:1/postgres", &binaries),
             .remote_health = nlohmann::json::object(),
             .remote_url = "http://127.0.0.1:2",
             .embedded_remote = true});
  CHECK(embedded.postgresql["embedded"] == true);
  CHECK(embedded.postgresql["bin_dir"] == "/c/postgresql-17.6.0/bin");
  CHECK(embedded.postgresql["source"] == "cache");
  CHECK(embedded.postgresql["binaries_version"] == k17);
  for (const auto& w : embedded.warnings) CHECK_THAT(w, !ContainsSubstring("differs from 17"));

  infra::PostgresInfo pg15;
  pg15.server_version = "15.14";
  pg15.server_version_num = 150014;
  const auto external = evidence::describe_environment(
      "r2", {.database = infra::describe_database(pg15, "postgresql://u:secret@db:5432/x", nullptr),
             .remote_health = nlohmann::json::object(),
             .remote_url = "http://127.0.0.1:2",
             .embedded_remote = false});
  CHECK(external.postgresql["embedded"] == false);
  CHECK(external.postgresql["bin_dir"].is_null());
  CHECK(external.postgresql["source"].is_null());
  CHECK(external.postgresql["binaries_version"].is_null());
  CHECK(external.postgresql["url"] == "postgresql://***@db:5432/x");
  bool warned = false;
  for (const auto& w : external.warnings) warned = warned || w.find("major 15 differs from 17") != std::string::npos;
  CHECK(warned);
}
