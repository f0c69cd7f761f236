#pragma once

// Checks a JSON document against one of the evidence schemas compiled in from
// schemas/ (draft-07, validated by valijson).

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace skewbench::artifacts {

// Each problem as "$.path: what is wrong"; empty when the document conforms.
// `schema_name` is a file name in schemas/ without ".schema.json"; throws
// std::invalid_argument for a name that is not compiled in.
std::vector<std::string> schema_problems(std::string_view schema_name, const nlohmann::json& document);

}  // namespace skewbench::artifacts
