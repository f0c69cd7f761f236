#include "common/digest.hpp"

#include <array>
#include <memory>
#include <stdexcept>

#include <openssl/evp.h>

namespace skewbench {

struct Sha256::State {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx{EVP_MD_CTX_new(), &EVP_MD_CTX_free};
};

Sha256::Sha256() : state_(std::make_unique<State>()) {
  if (!state_->ctx || EVP_DigestInit_ex(state_->ctx.get(), EVP_sha256(), nullptr) != 1) {
    throw std::runtime_error("SHA-256 initialisation failed in OpenSSL");
  }
}

Sha256::~Sha256() = default;

void Sha256::update(std::string_view bytes) {
  if (EVP_DigestUpdate(state_->ctx.get(), bytes.data(), bytes.size()) != 1) {
    throw std::runtime_error("SHA-256 update failed in OpenSSL");
  }
}

std::string Sha256::hex_digest() {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int md_len = 0;
  if (EVP_DigestFinal_ex(state_->ctx.get(), md.data(), &md_len) != 1) {
    throw std::runtime_error("SHA-256 computation failed in OpenSSL");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(md_len * 2);
  for (unsigned int i = 0; i < md_len; ++i) {
    out.push_back(kHex[md[i] >> 4]);
    out.push_back(kHex[md[i] & 0x0f]);
  }
  return out;
}

std::string sha256_hex(std::string_view bytes) {
  Sha256 digest;
  digest.update(bytes);
  return digest.hex_digest();
}

std::string json_digest(const nlohmann::json& value) { return sha256_hex(value.dump()); }

}  // namespace skewbench
