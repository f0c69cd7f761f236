#pragma once

// One throwaway PostgreSQL cluster and one remote-effect process shared by
// every test of a program (started on first use, stopped at exit).

#include <filesystem>
#include <string>
#include <vector>

#include "common/files.hpp"
#include "infra/postgres_cluster.hpp"
#include "remote_effect/launcher.hpp"

namespace skewbench::testing {

struct SharedStack {
  infra::PostgresCluster cluster;
  TempDir dir{"skewbench-shared-stack"};
  remote_effect::RemoteEffectProcess remote{[this] {
    remote_effect::LaunchOptions o;
    o.binary = SKEWBENCH_REMOTE_EFFECT_BIN;
    o.state_db = dir.path() / "remote.sqlite3";
    return o;
  }()};

  // --database-url URL --remote-url URL -q
  std::vector<std::string> service_args() {
    return {"--database-url", cluster.url(), "--remote-url", remote.base_url(), "-q"};
  }
};

inline SharedStack& shared_stack() {
  static SharedStack s;
  return s;
}

// A folder holding the shipped scenario files that can run on shared services
// (#015, #017, #018): #016 restarts the remote and needs its volatile mode, and
// #019's cleanups advance the remote's one temporal epoch, which concurrent or
// repeated runs on one remote would see differently.
inline std::string shared_service_scenarios() {
  static TempDir dir{"skewbench-shared-scenarios"};
  static const bool copied = [] {
    for (const auto& entry : std::filesystem::directory_iterator(SKEWBENCH_SOURCE_DIR "/scenarios")) {
      const auto name = entry.path().filename().string();
      if (!entry.is_regular_file() || entry.path().extension() != ".json") continue;
      if (name.starts_with("016-") || name.starts_with("019-")) continue;
      std::filesystem::copy_file(entry.path(), dir.path() / name);
    }
    return true;
  }();
  (void)copied;
  return dir.path().string();
}

}  // namespace skewbench::testing
