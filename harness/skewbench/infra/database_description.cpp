#include "infra/database_description.hpp"

#include <regex>

namespace skewbench::infra {

std::string redact_url(const std::string& url) {
  // URL user info (scheme://user:password@), and a password given as a
  // key=value pair or a URL query parameter.
  static const std::regex kUserInfo(R"(^([a-zA-Z][a-zA-Z0-9+.-]*://)([^@/]*)@)");
  static const std::regex kPasswordParameter(R"((^|[\s?&])(password\s*=\s*)('[^']*'|[^\s&]*))", std::regex::icase);
  return std::regex_replace(std::regex_replace(url, kUserInfo, "$1***@"), kPasswordParameter, "$1$2***");
}

DatabaseDescription describe_database(const PostgresInfo& server, const std::string& database_url,
                                      const PostgresBinaries* started) {
  return {.server = server,
          .redacted_url = redact_url(database_url),
          .started = started ? std::optional<PostgresBinaries>(*started) : std::nullopt};
}

}  // namespace skewbench::infra
