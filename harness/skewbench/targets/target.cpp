#include "targets/target.hpp"

#include <algorithm>
#include <cstdlib>
#include <regex>

#include <unistd.h>

#include "common/files.hpp"
#include "common/json_reader.hpp"
#include "common/text.hpp"
#include "infra/process_clock.hpp"

namespace skewbench::targets {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const std::regex kNamePattern("^[a-z0-9][a-z0-9._-]{0,63}$");
constexpr const char* kFileName = "target.json";

std::map<std::string, std::string> read_env(ObjectReader& parent, std::string_view key) {
  std::map<std::string, std::string> out;
  const auto* env = parent.optional(key);
  if (env == nullptr) return out;
  ObjectReader reader(*env, parent.child_path(key));
  for (const auto& [name, _] : env->items()) out[name] = reader.require_string(name);
  return out;
}

std::optional<infra::StoreOptions> read_store(ObjectReader& root, const fs::path& dir) {
  const auto* spec = root.optional("store");
  if (spec == nullptr) return std::nullopt;
  ObjectReader reader(*spec, "$.store");
  infra::StoreOptions store;
  store.name = reader.require_string("name");
  if (!std::regex_match(store.name, kNamePattern)) {
    throw InputError("$.store.name", "\"" + store.name + "\" must match [a-z0-9][a-z0-9._-]{0,63}");
  }
  store.command = reader.require_string("command");
  store.env = read_env(reader, "env");
  store.placeholders = {{"{target_dir}", dir.string()}};
  if (const auto wall_clock = reader.optional_string("wall_clock")) {
    if (!infra::kClockLibraries.parse(*wall_clock)) {
      throw InputError("$.store.wall_clock",
                       "\"" + *wall_clock + "\" is not one of: " + text::join(infra::kClockLibraries.names(), ", "));
    }
    store.wall_clock = *wall_clock;
  }
  if (const auto probe = reader.optional_string("clock_probe")) {
    if (probe->empty())
      throw InputError("$.store.clock_probe", "is empty; leave it out when the store cannot be asked");
    store.clock_probe = *probe;
  }
  reader.finish();
  return store;
}

Target parse_target(const json& document, const fs::path& file) {
  Target t;
  t.file = fs::absolute(file);
  t.dir = t.file.parent_path();
  ObjectReader root(document, "$");
  root.optional_string("$schema");
  t.name = root.require_string("name");
  if (t.name != t.dir.filename().string()) {
    throw InputError("$.name", "\"" + t.name + "\" is not the name of its folder, " + t.dir.filename().string());
  }
  if (!std::regex_match(t.name, kNamePattern)) {
    throw InputError("$.name", "\"" + t.name + "\" must match [a-z0-9][a-z0-9._-]{0,63}");
  }
  t.description = root.require_string("description");
  t.library = root.require_string("library");
  t.install = root.require_string("install");
  const auto& needs = root.require_array("needs");
  for (std::size_t i = 0; i < needs.size(); ++i) t.needs.push_back(expect_string(needs[i], index_path("$.needs", i)));
  ObjectReader service(root.require_object("service"), "$.service");
  t.service_command = service.require_string("command");
  t.service_env = read_env(service, "env");
  service.finish();
  t.store = read_store(root, t.dir);
  root.finish();
  return t;
}

}  // namespace

json Target::to_json() const {
  return {{"name", name},
          {"library", library},
          {"description", description},
          {"file", file.string()},
          {"store", store ? json(store->name) : json(nullptr)}};
}

Target load_target(const std::string& name_or_path, const fs::path& targets_dir) {
  fs::path file;
  if (name_or_path.find('/') != std::string::npos) {
    file = fs::is_directory(name_or_path) ? fs::path(name_or_path) / kFileName : fs::path(name_or_path);
  } else {
    file = targets_dir / name_or_path / kFileName;
  }
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) {
    std::string known;
    if (fs::is_directory(targets_dir, ec)) {
      for (const auto& t : load_targets(targets_dir)) known += (known.empty() ? "" : ", ") + t.name;
    }
    throw TargetFileError(
        "target " + name_or_path + ": no " + file.string() +
        (known.empty() ? std::string() : " (targets in " + targets_dir.string() + ": " + known + ")"));
  }
  try {
    return parse_target(parse_json_text(read_file(file)), file);
  } catch (const InputError& e) {
    throw TargetFileError(file.string() + ": " + e.json_path() + ": " + e.message());
  } catch (const std::exception& e) {
    throw TargetFileError(file.string() + ": " + e.what());
  }
}

std::vector<Target> load_targets(const fs::path& targets_dir) {
  std::error_code ec;
  if (!fs::is_directory(targets_dir, ec)) throw TargetFileError(targets_dir.string() + ": no such folder of targets");
  std::vector<fs::path> folders;
  for (const auto& entry : fs::directory_iterator(targets_dir)) {
    if (entry.is_directory() && fs::is_regular_file(entry.path() / kFileName)) folders.push_back(entry.path());
  }
  std::sort(folders.begin(), folders.end());
  if (folders.empty()) throw TargetFileError(targets_dir.string() + ": holds no folder with a " + kFileName);
  std::vector<Target> out;
  for (const auto& folder : folders) out.push_back(load_target(folder.string() + "/", targets_dir));
  return out;
}

std::vector<std::string> missing_needs(const Target& target) {
  std::vector<std::string> out;
  for (const auto& need : target.needs) {
    const bool file = need.find('/') != std::string::npos;
    std::error_code ec;
    if (file ? fs::exists(target.dir / need, ec) : find_on_path(need).has_value()) continue;
    out.push_back("target " + target.name + " needs " +
                  (file ? (target.dir / need).lexically_normal().string() : need) +
                  (file ? ", which is missing" : ", which is not on PATH") + "; install: " + target.install);
  }
  return out;
}

void use_target(const Target& target, runner::StackOptions& services) {
  services.remote_placeholders = {{"{target_dir}", target.dir.string()}};
  if (target.service_command.find("{remote_effect}") != std::string::npos) {
    services.remote_placeholders["{remote_effect}"] = runner::find_remote_effect_binary(services.remote_effect_binary);
  }
  services.remote_command = target.service_command;
  services.remote_env = target.service_env;
  services.store = target.store;
  services.clock_mode = runner::ClockMode::real;
  if (!services.ack_loss) services.ack_loss = infra::AckLoss::proxy;
  services.target = target.to_json();
}

}  // namespace skewbench::targets
