#pragma once

// One throwaway PostgreSQL cluster and one remote-effect process shared by
// every test of a program (started on first use, stopped at exit).

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

}  // namespace skewbench::testing
