#pragma once

// The published result files of the series, kept as test data in
// tests/data/published/<benchmark>.json (dotted path -> published value), and
// the field-by-field comparison of a result.json with them.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/files.hpp"

namespace skewbench::testing {

inline nlohmann::json published_values(const std::string& benchmark) {
  return nlohmann::json::parse(
      read_file(std::string(SKEWBENCH_SOURCE_DIR) + "/tests/data/published/" + benchmark + ".json"));
}

// "a.b[2].c" -> the value at /a/b/2/c, or null when the path is absent.
inline const nlohmann::json* at_dotted_path(const nlohmann::json& document, const std::string& dotted) {
  std::string pointer;
  for (const char c : dotted) {
    if (c == '.' || c == '[') {
      pointer += '/';
    } else if (c != ']') {
      pointer += c;
    }
  }
  const nlohmann::json::json_pointer path("/" + pointer);
  return document.contains(path) ? &document.at(path) : nullptr;
}

// The JSON type as a reader of the file sees it: 60 is an integer whether the
// parser stored it signed or unsigned.
inline std::string json_type(const nlohmann::json& value) {
  if (value.is_number_integer()) return "integer";
  if (value.is_number_float()) return "number";
  return value.type_name();
}

}  // namespace skewbench::testing
