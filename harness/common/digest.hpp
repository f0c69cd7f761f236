#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace skewbench {

// Lower-case hex SHA-256 of the bytes (OpenSSL EVP).
std::string sha256_hex(std::string_view bytes);

// SHA-256 over the canonical serialisation of a JSON value: object keys sorted
// (nlohmann::json keeps them sorted), no whitespace, UTF-8. Two equal values
// always give the same digest.
std::string json_digest(const nlohmann::json& value);

}  // namespace skewbench
