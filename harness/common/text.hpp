#pragma once

// Tiny text helpers shared by every table the driver prints or writes.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace skewbench::text {

// A JSON value as a table cell: "-" for null, a string without quotes,
// anything else as compact JSON.
inline std::string cell(const nlohmann::json& value) {
  if (value.is_null()) return "-";
  if (value.is_string()) return value.get<std::string>();
  return value.dump();
}

// `s` left-aligned in `width` columns; never cut.
inline std::string pad(const std::string& s, std::size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

// The parts with `separator` between them.
inline std::string join(const std::vector<std::string>& parts, const std::string& separator) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += separator;
    out += parts[i];
  }
  return out;
}

}  // namespace skewbench::text
