// The connection string skewbench hands to libpq: connect_timeout always, and
// gssencmode=disable unless the user already chose a GSSAPI encryption mode.

#include <cstdlib>

#include <catch2/catch_test_macros.hpp>

#include "infra/pg_outbox.hpp"

using skewbench::infra::libpq_connection_string;

namespace {

// Runs with PGGSSENCMODE unset, restoring it afterwards.
struct NoGssEncEnvironment {
  NoGssEncEnvironment() {
    if (const char* v = std::getenv("PGGSSENCMODE")) saved = v;
    ::unsetenv("PGGSSENCMODE");
  }
  ~NoGssEncEnvironment() {
    if (!saved.empty()) ::setenv("PGGSSENCMODE", saved.c_str(), 1);
  }
  std::string saved;
};

}  // namespace

TEST_CASE("a URL without gssencmode gets gssencmode=disable after connect_timeout") {
  NoGssEncEnvironment env;
  CHECK(libpq_connection_string("postgresql://u@127.0.0.1:5432/db", 7) ==
        "postgresql://u@127.0.0.1:5432/db?connect_timeout=7&gssencmode=disable");
  CHECK(libpq_connection_string("postgres://u@127.0.0.1/db?sslmode=disable", 3) ==
        "postgres://u@127.0.0.1/db?sslmode=disable&connect_timeout=3&gssencmode=disable");
  CHECK(libpq_connection_string("host=127.0.0.1 dbname=db", 5) ==
        "host=127.0.0.1 dbname=db connect_timeout=5 gssencmode=disable");
  CHECK(libpq_connection_string("", 5) == "connect_timeout=5 gssencmode=disable");
}

TEST_CASE("a gssencmode the user chose stands, in a URL, a key=value string or the environment") {
  NoGssEncEnvironment env;
  CHECK(libpq_connection_string("postgresql://u@h/db?gssencmode=require", 7) ==
        "postgresql://u@h/db?gssencmode=require&connect_timeout=7");
  CHECK(libpq_connection_string("postgresql://u@h/db?a=1&gssencmode=prefer", 7) ==
        "postgresql://u@h/db?a=1&gssencmode=prefer&connect_timeout=7");
  CHECK(libpq_connection_string("host=h gssencmode = prefer", 7) == "host=h gssencmode = prefer connect_timeout=7");
  // Only a parameter counts: the word in a database name does not.
  CHECK(libpq_connection_string("postgresql://u@h/gssencmode=x", 7) ==
        "postgresql://u@h/gssencmode=x?connect_timeout=7&gssencmode=disable");
  ::setenv("PGGSSENCMODE", "prefer", 1);
  CHECK(libpq_connection_string("postgresql://u@h/db", 7) == "postgresql://u@h/db?connect_timeout=7");
  ::unsetenv("PGGSSENCMODE");
}
