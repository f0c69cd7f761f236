#pragma once

// The one place that knows libpqxx versions differ. libpqxx 6.4 (Debian 12)
// has only transaction_base::exec_params; 7.10 deprecates it in favour of
// exec(query, pqxx::params{...}). Everything else calls these wrappers.

#include <string>
#include <utility>

#include <pqxx/pqxx>
#include <pqxx/version.hxx>

namespace skewbench::infra::pq {

#if PQXX_VERSION_MAJOR > 7 || (PQXX_VERSION_MAJOR == 7 && PQXX_VERSION_MINOR >= 10)
#define SKEWBENCH_PQXX_HAS_PARAMS_EXEC 1
#else
#define SKEWBENCH_PQXX_HAS_PARAMS_EXEC 0
#endif

// Runs one statement with bound parameters ($1, $2, ...).
template <typename... Args>
pqxx::result exec(pqxx::transaction_base& tx, const std::string& sql, Args&&... args) {
#if SKEWBENCH_PQXX_HAS_PARAMS_EXEC
  return tx.exec(sql, pqxx::params{std::forward<Args>(args)...});
#else
  return tx.exec_params(sql, std::forward<Args>(args)...);
#endif
}

// Runs a statement prepared on the connection under `name`.
template <typename... Args>
pqxx::result exec_prepared(pqxx::transaction_base& tx, const std::string& name, Args&&... args) {
#if SKEWBENCH_PQXX_HAS_PARAMS_EXEC
  return tx.exec(pqxx::prepped{name}, pqxx::params{std::forward<Args>(args)...});
#else
  return tx.exec_prepared(name, std::forward<Args>(args)...);
#endif
}

// Runs a statement without parameters (DDL, SHOW).
inline pqxx::result exec0(pqxx::transaction_base& tx, const std::string& sql) { return tx.exec(sql); }

}  // namespace skewbench::infra::pq
