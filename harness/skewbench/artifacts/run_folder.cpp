#include "artifacts/run_folder.hpp"

#include "artifacts/markdown.hpp"
#include "common/files.hpp"
#include "published/published.hpp"

namespace skewbench::artifacts {
namespace {

// The files of a run are flushed and published together (OutFolder::publish),
// so each is written here without a flush of its own.
void write_unsynced(const std::filesystem::path& path, std::string_view bytes) {
  std::filesystem::create_directories(path.parent_path());
  write_file_unsynced(path, bytes);
}

}  // namespace

std::string write_run_artifacts(const std::filesystem::path& out_dir,
                                const std::vector<const scenario::Scenario*>& scenarios,
                                const std::vector<runner::ScenarioResult>& results,
                                const evidence::RunEnvironment& env) {
  for (std::size_t i = 0; i < scenarios.size(); ++i) {
    const auto evidence = evidence::scenario_evidence(*scenarios[i], results[i], env);
    write_unsynced(out_dir / "scenarios" / (scenarios[i]->id + ".json"), evidence.dump(2) + "\n");
  }
  const auto summary = evidence::run_summary(scenarios, results, env);
  const auto environment = env.to_json();
  const auto published = published::published_files(scenarios, results, env);
  for (const auto& file : published) {
    auto with_environment = file.result;
    with_environment["environment"] = environment;
    write_unsynced(out_dir / file.benchmark->result_file, with_environment.dump(2) + "\n");
  }
  write_unsynced(out_dir / "RESULT.md", result_markdown(scenarios, results, summary, published, env));
  write_unsynced(out_dir / "summary.json", summary.dump(2) + "\n");
  return summary["core_digest"].get<std::string>();
}

}  // namespace skewbench::artifacts
