// The launcher's command template, without starting anything.

#include <stdexcept>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "remote_effect/launcher.hpp"

namespace re = skewbench::remote_effect;

TEST_CASE("a service command's placeholders become this start's values, shell-quoted") {
  re::LaunchOptions options;
  options.state_db = "/tmp/it's here/remote.db";
  options.dedupe = re::DedupeMode::volatile_;
  CHECK(re::expand_command("svc --port {port} --db {state_db} --mode {dedupe} --host {host}", options, 8081) ==
        "svc --port 8081 --db '/tmp/it'\\''s here/remote.db' --mode volatile --host '127.0.0.1'");
}

TEST_CASE("braces that are the shell's stay as written; an unknown placeholder is refused by name") {
  const re::LaunchOptions options;
  CHECK(re::expand_command("svc --port ${PORT} | awk '{print $1}'", options, 1) ==
        "svc --port ${PORT} | awk '{print $1}'");
  CHECK_THROWS_WITH(re::expand_command("svc --port {prot}", options, 1),
                    Catch::Matchers::ContainsSubstring("unknown placeholder {prot}"));
  CHECK_THROWS_WITH(re::expand_command("svc --port {PORT}", options, 1),
                    Catch::Matchers::ContainsSubstring("unknown placeholder {PORT}"));
  CHECK_THROWS_WITH(re::expand_command("svc --db {state-db}", options, 1),
                    Catch::Matchers::ContainsSubstring("unknown placeholder {state-db}"));
}

TEST_CASE("more placeholders are filled in the same pass: what a value brings in is never read again") {
  re::LaunchOptions options;
  options.placeholders = {{"{target_dir}", "/srv/odd {port} dir"}, {"{store_port}", "6379"}};
  CHECK(re::expand_command("node {target_dir}/service.js --redis {store_port} --port {port}", options, 8081) ==
        "node '/srv/odd {port} dir'/service.js --redis '6379' --port 8081");
  CHECK_THROWS_WITH(re::expand_command("svc {store_dir}", options, 1),
                    Catch::Matchers::ContainsSubstring("{store_port}, {target_dir}"));
}
