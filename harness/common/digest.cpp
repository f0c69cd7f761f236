#include "common/digest.hpp"

#include <array>
#include <memory>
#include <stdexcept>

#include <openssl/evp.h>

namespace skewbench {

std::string sha256_hex(std::string_view bytes) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int md_len = 0;
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1 ||
      EVP_DigestUpdate(ctx.get(), bytes.data(), bytes.size()) != 1 ||
      EVP_DigestFinal_ex(ctx.get(), md.data(), &md_len) != 1) {
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

std::string json_digest(const nlohmann::json& value) { return sha256_hex(value.dump()); }

}  // namespace skewbench
