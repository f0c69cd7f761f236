#pragma once

// The services a run talks to. Given URLs, the stack uses them as they are;
// without them it starts its own: a throwaway PostgreSQL cluster and a
// remote-effect child process on a temporary SQLite file, both stopped when
// the stack is destroyed (normal end, error or Ctrl-C).

#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/files.hpp"
#include "steps/step.hpp"

namespace skewbench::infra {
class PostgresCluster;
}
namespace skewbench::remote_effect {
class RemoteEffectProcess;
}

namespace skewbench::runner {

struct StackOptions {
  std::optional<std::string> database_url;  // external PostgreSQL, or start one
  std::optional<std::string> remote_url;    // external remote-effect, or start one
  std::optional<std::string> remote_effect_binary;
  std::string remote_sync = "full";
  bool quiet = false;  // no progress lines on stderr
};

// Finds the remote-effect executable: the given path, $SKEWBENCH_REMOTE_EFFECT_BIN,
// the directory of the running skewbench executable, then PATH.
std::string find_remote_effect_binary(const std::optional<std::string>& given);

class Stack final : public steps::RemoteControl {
 public:
  // Throws InfrastructureError when a service cannot be started.
  explicit Stack(const StackOptions& options);
  ~Stack() override;

  const std::string& database_url() const { return database_url_; }
  const std::string& remote_url() const { return remote_url_; }
  bool embedded_database() const { return cluster_ != nullptr; }
  bool embedded_remote() const { return remote_ != nullptr; }
  // Null when the remote is external and cannot be restarted by us.
  steps::RemoteControl* remote_control() { return remote_ ? this : nullptr; }

  std::string restart_remote() override;

 private:
  std::unique_ptr<TempDir> work_dir_;
  std::unique_ptr<infra::PostgresCluster> cluster_;
  std::unique_ptr<remote_effect::RemoteEffectProcess> remote_;
  std::string database_url_;
  std::string remote_url_;
};

}  // namespace skewbench::runner
