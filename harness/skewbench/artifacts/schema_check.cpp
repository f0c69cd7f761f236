#include "artifacts/schema_check.hpp"

#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>

#include <skewbench/schemas.hpp>
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

#include "common/json_reader.hpp"

namespace skewbench::artifacts {
namespace {

// valijson's context is {"<root>", "[scenarios]", "[0]", ...}: as a JSON path.
std::string json_path(const std::vector<std::string>& context) {
  std::string path = "$";
  for (const auto& part : context) {
    if (part == "<root>" || part.size() < 2) continue;
    const auto inner = part.substr(1, part.size() - 2);
    const bool index = !inner.empty() && inner.find_first_not_of("0123456789") == std::string::npos;
    path += index ? "[" + inner + "]" : "." + inner;
  }
  return path;
}

const valijson::Schema& compiled(std::string_view name) {
  static std::mutex mutex;
  static std::map<std::string, std::pair<nlohmann::json, std::unique_ptr<valijson::Schema>>, std::less<>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  if (const auto it = cache.find(name); it != cache.end()) return *it->second.second;
  for (const auto& [schema_name, text] : schemas::kEvidenceSchemas) {
    if (schema_name != name) continue;
    auto& entry = cache[std::string(name)];
    entry.first = parse_bounded_json(text);
    entry.second = std::make_unique<valijson::Schema>();
    valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
    valijson::adapters::NlohmannJsonAdapter adapter(entry.first);
    parser.populateSchema(adapter, *entry.second);
    return *entry.second;
  }
  throw std::invalid_argument("no schema named " + std::string(name));
}

}  // namespace

std::vector<std::string> schema_problems(std::string_view schema_name, const nlohmann::json& document) {
  const auto& schema = compiled(schema_name);
  valijson::Validator validator(valijson::Validator::kStrongTypes);
  valijson::ValidationResults results;
  valijson::adapters::NlohmannJsonAdapter target(document);
  std::vector<std::string> problems;
  if (validator.validate(schema, target, &results)) return problems;
  valijson::ValidationResults::Error error;
  while (results.popError(error)) problems.push_back(json_path(error.context) + ": " + error.description);
  return problems;
}

}  // namespace skewbench::artifacts
