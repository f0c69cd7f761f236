#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace skewbench {

// Incremental SHA-256, for digests over streams too long to hold in memory.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(std::string_view bytes);
  std::string hex_digest();  // finishes the digest; call once

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Lower-case hex SHA-256 of the bytes (OpenSSL EVP).
std::string sha256_hex(std::string_view bytes);

// SHA-256 over the canonical serialisation of a JSON value: object keys sorted
// (nlohmann::json keeps them sorted), no whitespace, UTF-8. Two equal values
// always give the same digest.
std::string json_digest(const nlohmann::json& value);

}  // namespace skewbench
