#include "targets/target.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <regex>

#include <unistd.h>

#include "common/files.hpp"
#include "common/json_reader.hpp"
#include "common/text.hpp"
#include "infra/process_clock.hpp"
#include "remote_effect/protocol.hpp"

namespace skewbench::targets {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kFileName = "target.json";

std::map<std::string, std::string> read_env(ObjectReader& parent, std::string_view key) {
  std::map<std::string, std::string> out;
  const auto* env = parent.optional(key);
  if (env == nullptr) return out;
  ObjectReader reader(*env, parent.child_path(key));
  for (const auto& [name, _] : env->items()) out[name] = reader.require_string(name);
  return out;
}

// A known placeholder written wrong ("{sink_url" with no closing brace,
// "{{port}}" with doubled ones) would reach the service as written: refused.
void check_placeholder_spelling(std::string_view text, std::string_view known, const std::string& path) {
  const auto stem = known.substr(0, known.size() - 1);  // "{sink_url"
  for (auto at = text.find(stem); at != std::string_view::npos; at = text.find(stem, at + 1)) {
    const auto after = at + stem.size();
    if (after < text.size() && text[after] == '}') {
      if (at > 0 && text[at - 1] == '{' && after + 1 < text.size() && text[after + 1] == '}') {
        throw InputError(path, "{" + std::string(known) + "} doubles its braces: write " + std::string(known));
      }
      continue;
    }
    if (after < text.size() && text::placeholder_name_char(text[after], false)) continue;  // another name
    throw InputError(path, "\"" + std::string(stem) + "\" lacks its closing brace: write " + std::string(known));
  }
}

void check_placeholders(std::string_view text, const std::vector<std::string_view>& known, const std::string& path) {
  for (const auto name : known) check_placeholder_spelling(text, name, path);
  for (const auto& name : text::placeholders_in(text)) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      throw InputError(path, name + " is not a placeholder here (it may hold " +
                                 text::join(std::vector<std::string>(known.begin(), known.end()), ", ") + ")");
    }
  }
}

// A header name is an RFC 9110 token; anything else would be sent as written.
void check_header_name(const std::string& name, const std::string& path) {
  static constexpr std::string_view kTokenMarks = "!#$%&'*+-.^_`|~";
  const auto token_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || kTokenMarks.find(c) != std::string_view::npos;
  };
  if (name.empty() || !std::all_of(name.begin(), name.end(), token_char)) {
    throw InputError(
        path, "\"" + text::short_prefix(name) + "\" is not a header name (letters, digits and !#$%&'*+-.^_`|~ only)");
  }
}

// A header value or a request path with a control character (CR, LF, NUL)
// would end the line it is in and write another: refused.
void check_no_control(const std::string& value, const std::string& path, const std::string& what) {
  const auto control = [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return (byte < 0x20 && c != '\t') || byte == 0x7f;
  };
  if (std::any_of(value.begin(), value.end(), control)) {
    throw InputError(path, what + " holds a control character (CR, LF, NUL...): \"" + text::short_prefix(value) + "\"");
  }
}

// When the store serves: its port accepts a connection ({"tcp_port": true},
// the default), or also a command exits 0 ({"command": "pg_isready ..."}).
std::string read_store_ready(ObjectReader& store) {
  const auto* spec = store.optional("ready");
  if (spec == nullptr) return "";
  ObjectReader reader(*spec, "$.store.ready");
  if (spec->size() != 1) throw InputError("$.store.ready", "holds exactly one of command, tcp_port");
  std::string command;
  if (const auto given = reader.optional_string("command")) {
    if (given->empty()) throw InputError("$.store.ready.command", "is empty");
    command = *given;
  } else if (const auto tcp = reader.optional_bool("tcp_port")) {
    if (!*tcp) throw InputError("$.store.ready.tcp_port", "is true, or left out");
  }
  reader.finish();
  return command;
}

std::optional<infra::StoreOptions> read_store(ObjectReader& root, const fs::path& dir) {
  const auto* spec = root.optional("store");
  if (spec == nullptr) return std::nullopt;
  ObjectReader reader(*spec, "$.store");
  infra::StoreOptions store;
  store.name = reader.require_string("name");
  if (!is_target_name(store.name)) {
    throw InputError("$.store.name", "\"" + store.name + "\" must match " + std::string(kTargetNamePattern));
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
  store.ready_command = read_store_ready(reader);
  if (const auto user = reader.optional_string("run_as")) {
    if (!std::regex_match(*user, std::regex("[a-z_][a-z0-9_-]{0,31}"))) {
      throw InputError("$.store.run_as", "\"" + *user + "\" is not a user name");
    }
    store.run_as = *user;
  }
  reader.finish();
  const std::vector<std::string_view> known = {"{target_dir}", "{store_port}", "{store_dir}"};
  check_placeholders(store.command, known, "$.store.command");
  for (const auto& [variable, value] : store.env) check_placeholders(value, known, "$.store.env." + variable);
  check_placeholders(store.clock_probe, known, "$.store.clock_probe");
  check_placeholders(store.ready_command, known, "$.store.ready.command");
  return store;
}

constexpr std::int64_t kSchemaVersion = 2;

// The placeholders a service command and its environment may hold, for each
// wire; the stack fills them in (runner/stack.hpp, remote_effect/launcher.hpp).
// The placeholders an instance's environment values may hold: those of the
// target, its store and its own wire (its port, ledger, mode and host reach it
// in PORT, STATE_DB, IDEMPOTENCY_MODE and HOST instead).
std::vector<std::string_view> env_placeholders(bool own_wire, bool has_store) {
  std::vector<std::string_view> out = {"{target_dir}", "{remote_effect}"};
  if (has_store) out.insert(out.end(), {"{store_port}", "{store_dir}"});
  if (own_wire) out.insert(out.end(), {"{sink_url}", "{ttl_s}"});
  return out;
}

// Those its command may hold: the environment's, and the instance's own.
std::vector<std::string_view> command_placeholders(bool own_wire, bool has_store) {
  auto out = env_placeholders(own_wire, has_store);
  out.insert(out.end(), {"{port}", "{state_db}", "{dedupe}", "{host}"});
  return out;
}

const std::vector<std::string_view> kRequestNames(std::begin(infra::kRequestPlaceholders),
                                                  std::end(infra::kRequestPlaceholders));

void check_pointer(const std::string& pointer, const std::string& path) {
  try {
    const json::json_pointer parsed(pointer);
  } catch (const std::exception& e) {
    throw InputError(path, "\"" + pointer + "\" is not a JSON pointer: " + e.what());
  }
}

// $.service.stop ({"signal": "SIGINT", "grace_s": 10}) and $.service.restart
// ("kill", the default, or "graceful").
remote_effect::Stopping read_stopping(ObjectReader& service) {
  remote_effect::Stopping stopping;
  if (const auto* spec = service.optional("stop")) {
    ObjectReader reader(*spec, "$.service.stop");
    if (const auto name = reader.optional_string("signal")) {
      stopping.signal = remote_effect::stop_signal_named(*name);
      if (stopping.signal == 0) {
        throw InputError("$.service.stop.signal",
                         "\"" + *name + "\" is not one of: SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGUSR1, SIGUSR2");
      }
    }
    if (const auto grace_s = reader.optional_int_within("grace_s", 0, 60)) {
      stopping.grace = std::chrono::seconds(*grace_s);
    }
    reader.finish();
  }
  if (const auto restart = service.optional_string("restart")) {
    if (*restart != "kill" && *restart != "graceful") {
      throw InputError("$.service.restart", "\"" + *restart + "\" is not one of: kill, graceful");
    }
    stopping.graceful_restart = *restart == "graceful";
  }
  return stopping;
}

remote_effect::Readiness read_ready(ObjectReader& service) {
  remote_effect::Readiness ready;
  const auto* spec = service.optional("ready");
  if (spec == nullptr) return ready;
  ObjectReader reader(*spec, "$.service.ready");
  if (spec->size() != 1) throw InputError("$.service.ready", "holds exactly one of http_get, tcp_port, log_line");
  if (const auto path = reader.optional_string("http_get")) {
    if (!path->starts_with('/')) throw InputError("$.service.ready.http_get", "a path starts with '/'");
    check_no_control(*path, "$.service.ready.http_get", "a path");
    if (path->find(' ') != std::string::npos) throw InputError("$.service.ready.http_get", "a path holds no space");
    ready = {.kind = remote_effect::Readiness::Kind::http_get, .value = *path};
  } else if (const auto line = reader.optional_string("log_line")) {
    if (line->empty()) throw InputError("$.service.ready.log_line", "is empty");
    ready = {.kind = remote_effect::Readiness::Kind::log_line, .value = *line};
  } else if (const auto tcp = reader.optional_bool("tcp_port")) {
    if (!*tcp) throw InputError("$.service.ready.tcp_port", "is true, or left out");
    ready = {.kind = remote_effect::Readiness::Kind::tcp_port, .value = ""};
  }
  reader.finish();
  return ready;
}

infra::OperationIdSource read_sink(ObjectReader& root) {
  ObjectReader sink(root.require_object("sink"), "$.sink");
  const auto& spec = sink.require_object("operation_id");
  ObjectReader reader(spec, "$.sink.operation_id");
  if (spec.size() != 1) {
    throw InputError("$.sink.operation_id", "holds exactly one of header, json_pointer, path_segment");
  }
  infra::OperationIdSource source;
  if (const auto header = reader.optional_string("header")) {
    if (header->empty()) throw InputError("$.sink.operation_id.header", "is empty");
    source.header = *header;
  } else if (const auto pointer = reader.optional_string("json_pointer")) {
    check_pointer(*pointer, "$.sink.operation_id.json_pointer");
    source.from = infra::OperationIdSource::From::json_pointer;
    source.json_pointer = *pointer;
  } else if (const auto segment = reader.optional_int_within("path_segment", 0, 64)) {
    source.from = infra::OperationIdSource::From::path_segment;
    source.path_segment = static_cast<std::size_t>(*segment);
  }
  reader.finish();
  sink.finish();
  return source;
}

infra::AnswerClass read_class(const json& value, const std::string& path) {
  const auto word = expect_string(value, path);
  const auto parsed = infra::kAnswerClasses.parse(word);
  if (!parsed) {
    throw InputError(path, "\"" + word + "\" is not one of: " + text::join(infra::kAnswerClasses.names(), ", "));
  }
  return *parsed;
}

void read_answer(ObjectReader& root, infra::OwnWire& wire) {
  ObjectReader answer(root.require_object("answer"), "$.answer");
  // Read by a field of the answer, by its status, or by the field first and
  // the status when the field is not there.
  if (!answer.has("status") && !answer.has("json_pointer")) {
    throw InputError("$.answer", "holds status, or json_pointer with values, or both");
  }
  static const json kNoStatuses = json::object();
  const auto& statuses = answer.has("status") ? answer.require_object("status") : kNoStatuses;
  for (const auto& [code, word] : statuses.items()) {
    const auto path = "$.answer.status." + code;
    const auto parsed = remote_effect::parse_int64(code);
    if (!parsed || *parsed < 100 || *parsed > 599) throw InputError(path, "\"" + code + "\" is not an HTTP status");
    wire.by_status[static_cast<int>(*parsed)] = read_class(word, path);
  }
  if (const auto pointer = answer.optional_string("json_pointer")) {
    check_pointer(*pointer, "$.answer.json_pointer");
    wire.json_pointer = *pointer;
    for (const auto& [value, word] : answer.require_object("values").items()) {
      wire.by_value[value] = read_class(word, "$.answer.values." + value);
    }
  }
  answer.finish();
}

std::string read_template(const json& value, const std::string& path) {
  // A body may be written as JSON; its text is the template then.
  const auto out = value.is_string() ? value.get<std::string>() : value.dump();
  check_placeholders(out, kRequestNames, path);
  return out;
}

infra::OwnWire read_own_wire(ObjectReader& root, const std::string& name) {
  infra::OwnWire wire;
  wire.target = name;
  ObjectReader request(root.require_object("request"), "$.request");
  wire.method = request.optional_string("method").value_or("POST");
  static const std::vector<std::string> kMethods = {"POST", "PUT", "PATCH"};
  if (std::find(kMethods.begin(), kMethods.end(), wire.method) == kMethods.end()) {
    throw InputError("$.request.method", "\"" + wire.method + "\" is not one of: " + text::join(kMethods, ", "));
  }
  wire.path = read_template(request.require_string("path"), "$.request.path");
  if (!wire.path.starts_with('/')) throw InputError("$.request.path", "a path starts with '/'");
  check_no_control(wire.path, "$.request.path", "a path");
  if (wire.path.find(' ') != std::string::npos) throw InputError("$.request.path", "a path holds no space");
  wire.key_header = request.optional_string("key_header").value_or("Idempotency-Key");
  check_header_name(wire.key_header, "$.request.key_header");
  for (const auto& [header, value] : read_env(request, "headers")) {
    check_header_name(header, "$.request.headers");
    check_no_control(value, "$.request.headers." + header, "a header value");
    wire.headers.emplace_back(header, read_template(value, "$.request.headers." + header));
  }
  wire.body = request.has("body") ? read_template(request.require("body"), "$.request.body") : std::string();
  request.finish();
  read_answer(root, wire);
  return wire;
}

// $.service.wire and what goes with it; `root` is past $.service.
void read_wire(ObjectReader& root, ObjectReader& service, Target& t) {
  const auto wire = service.optional_string("wire").value_or("skewbench");
  if (wire != "skewbench" && wire != "own") {
    throw InputError("$.service.wire", "\"" + wire + "\" is not one of: skewbench, own");
  }
  t.ready = read_ready(service);
  if (wire == "skewbench") {
    for (const auto* key : {"request", "answer", "sink"}) {
      if (root.has(key))
        throw InputError(std::string("$.") + key, "belongs to a service of its own wire (\"wire\": \"own\")");
    }
    if (service.has("ttl_s")) throw InputError("$.service.ttl_s", "belongs to a service of its own wire");
    return;
  }
  if (t.ready.kind == remote_effect::Readiness::Kind::protocol_health) {
    throw InputError("$.service.ready",
                     "is required for a service of its own wire: {\"http_get\": PATH}, "
                     "{\"tcp_port\": true} or {\"log_line\": TEXT}");
  }
  t.ttl_s = service.require_int_within("ttl_s", 1, 86'400 * 366);
  t.own_wire = read_own_wire(root, t.name);
  t.sink_operation_id = read_sink(root);
}

void check_version(const ObjectReader& root, std::int64_t version) {
  if (version == 1) {
    for (const auto* key : {"request", "answer", "sink"}) {
      if (root.has(key)) {
        throw InputError(std::string("$.") + key,
                         "describes a service of its own wire, which needs \"schema_version\": 2 (and "
                         "\"wire\": \"own\" in $.service); docs/targets.md shows the form");
      }
    }
  }
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
  if (!is_target_name(t.name)) {
    throw InputError("$.name", "\"" + t.name + "\" must match " + std::string(kTargetNamePattern));
  }
  t.description = root.require_string("description");
  t.library = root.require_string("library");
  t.install = root.require_string("install");
  const auto& needs = root.require_array("needs");
  for (std::size_t i = 0; i < needs.size(); ++i) t.needs.push_back(expect_string(needs[i], index_path("$.needs", i)));
  t.schema_version = static_cast<int>(root.optional_int_within("schema_version", 1, kSchemaVersion).value_or(1));
  check_version(root, t.schema_version);
  ObjectReader service(root.require_object("service"), "$.service");
  t.service_command = service.require_string("command");
  t.service_env = read_env(service, "env");
  t.stopping = read_stopping(service);
  t.ready_timeout = std::chrono::seconds(service.optional_int_within("ready_timeout_s", 1, 600).value_or(10));
  if (const auto wall_clock = service.optional_string("wall_clock")) {
    const auto parsed = infra::kClockLibraries.parse(*wall_clock);
    if (!parsed) {
      throw InputError("$.service.wall_clock",
                       "\"" + *wall_clock + "\" is not one of: " + text::join(infra::kClockLibraries.names(), ", "));
    }
    t.wall_clock = *parsed;
  }
  if (t.schema_version >= 2) read_wire(root, service, t);
  service.finish();
  t.store = read_store(root, t.dir);
  const bool own = t.own_wire.has_value();
  check_placeholders(t.service_command, command_placeholders(own, t.store.has_value()), "$.service.command");
  const auto known_in_env = env_placeholders(own, t.store.has_value());
  for (const auto& [variable, value] : t.service_env) {
    check_placeholders(value, known_in_env, "$.service.env." + variable);
  }
  root.finish();
  return t;
}

}  // namespace

bool is_target_name(std::string_view name) {
  static const std::regex pattern("^" + std::string(kTargetNamePattern) + "$");
  return std::regex_match(name.begin(), name.end(), pattern);
}

json Target::to_json() const {
  json out = {{"name", name},
              {"library", library},
              {"description", description},
              {"file", file.string()},
              {"store", store ? json(store->name) : json(nullptr)},
              {"wire", own_wire ? "own" : "skewbench"},
              {"stopping", stopping.to_json()},
              {"ready_timeout_s", ready_timeout.count()}};
  if (own_wire) {
    out["ready"] = ready.to_json();
    out["ttl_s"] = ttl_s ? json(*ttl_s) : json(nullptr);
    out["request"] = {{"method", own_wire->method}, {"path", own_wire->path}, {"key_header", own_wire->key_header}};
    out["sink"] = {{"operation_id", sink_operation_id.to_json()}};
  }
  return out;
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
    return parse_target(parse_json_text(read_file(file), JsonComments::allowed), file);
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
  const auto names_remote_effect = [](const std::string& text) {
    return text.find("{remote_effect}") != std::string::npos;
  };
  if (names_remote_effect(target.service_command) ||
      std::any_of(target.service_env.begin(), target.service_env.end(),
                  [&](const auto& variable) { return names_remote_effect(variable.second); })) {
    services.remote_placeholders["{remote_effect}"] = runner::find_remote_effect_binary(services.remote_effect_binary);
  }
  services.remote_command = target.service_command;
  services.remote_env = target.service_env;
  services.store = target.store;
  services.clock_mode = runner::ClockMode::real;
  if (!services.ack_loss) services.ack_loss = infra::AckLoss::proxy;
  services.target = target.to_json();
  services.remote_ready = target.ready;
  services.remote_ready_timeout = target.ready_timeout;
  services.remote_stopping = target.stopping;
  services.remote_wall_clock = target.wall_clock;
  services.own_wire = target.own_wire;
  services.sink_operation_id = target.sink_operation_id;
  services.service_ttl_s = target.ttl_s;
  if (target.ttl_s) services.remote_placeholders["{ttl_s}"] = std::to_string(*target.ttl_s);
}

}  // namespace skewbench::targets
