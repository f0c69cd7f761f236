#!/usr/bin/env bash
# Runs the shipped docker-compose.yml for real, on a Docker engine of its own.
#
#   compose_test.sh SOURCE_DIR SKEWBENCH_BIN
#
# SKEWBENCH_BIN is a skewbench built on this host: `skewbench verify` checks the
# evidence folders the container wrote.
#
# 1. Starts a private dockerd (no iptables, no bridge, its own data root, exec
#    root, socket and pid file), so no other engine and no user image is touched.
# 2. Builds debian:trixie-slim from `debootstrap --variant=minbase trixie`, the
#    postgres:17.6 stand-in (postgres-standin/) and the project's Dockerfile,
#    each `docker build --network host` so apt reaches Debian's archive.
# 3. Brings docker-compose.yml up with compose.host-network.yml, which puts every
#    service on the host network listening on free loopback ports: containers
#    never get a bridge network. The project directory is a scratch directory
#    whose ./results belongs to an unprivileged owner, so the developer's own
#    results/ and results/latest are never touched.
# 4. Checks skewbench's exit code and the evidence of the three runs the shipped
#    command makes (every scenario but #016's against the remote-effect
#    container, then #016's against a remote-effect skewbench starts itself,
#    then scenarios/instances/ on real clocks, instances skewbench starts):
#    every published result 10/10, `skewbench verify` accepts every folder, and
#    every file belongs to the owner of ./results.
# 5. Replaces the remote-effect container twice and checks that each new process
#    still has the state of the run (every operation's effects, key records and
#    POSTs, the temporal epoch) from the named volume; after `down --volumes` a
#    new container must have none, and no container, volume or network is left.
# 6. Stops dockerd and checks that no mount or process of it remains.
#
# The debootstrap tarball and dockerd's data root (images and their layer cache)
# are kept in <cache>/docker, <cache> being the project's cache directory
# ($SKEWBENCH_CACHE_DIR, for root /var/cache/skewbench; scripts/lib/postgresql.sh).
# A later run rebuilds only the layers whose inputs changed: the project's image
# is built with the commit that last changed its inputs (Dockerfile, sources,
# scenarios), so a commit that changes none of them reuses it whole. A damaged
# tarball (checksum), a base image that does not run, or a data root dockerd
# cannot start on is discarded and rebuilt. One run at a time uses the cache
# (flock). Every phase is bounded so that the whole test ends within
# 1740 s (CTest's TIMEOUT is a minute more), and its time is printed.
# Whatever happens, the exit trap removes the containers, volumes, dockerd, its
# mounts and the scratch directory.
#
# Exit codes: 0 pass; 1 a check failed or time ran out; 77 skipped (not root, a
# tool missing, or dockerd cannot start on this machine): the reason is printed.
set -euo pipefail

src=$(cd "${1:?usage: compose_test.sh SOURCE_DIR SKEWBENCH_BIN}" && pwd)
skewbench_bin=${2:?usage: compose_test.sh SOURCE_DIR SKEWBENCH_BIN}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# skewbench_postgres_cache_dir: the project's cache directory.
source "$src/scripts/lib/postgresql.sh"
PATH="$PATH:/usr/sbin:/sbin"
project=skewbenchdockertest
# Owner of the scratch ./results: neither root nor the image's skewbench user,
# so files the container failed to hand over are caught.
results_uid=54321
results_gid=54321

# The image inputs: what the Dockerfile copies (see .dockerignore) and itself.
image_inputs=(Dockerfile .dockerignore CMakeLists.txt cmake harness schemas scenarios)
# The whole test, waiting for the cache included, ends within this many seconds.
budget_s=1740
lock_wait_s=600
compose_up_s=600

cache=$(skewbench_postgres_cache_dir)/docker
data_root=$cache/data-root
work=""
dockerd_pid=""
started=$SECONDS
deadline=$((SECONDS + budget_s))

# fd 8 is the test's own output: messages reach it from inside commands whose
# output goes to a log file.
exec 8>&1
log() { printf '[docker-test %s +%ss] %s\n' "$(date -u +%H:%M:%S)" "$((SECONDS - started))" "$*" >&8; }

# Phase timings, printed at the end whether the test passes or not.
phase_name=""
phase_began=$SECONDS
phase_times=()
phase() {
  [[ -n $phase_name ]] && phase_times+=("$(printf '%6d s  %s' "$((SECONDS - phase_began))" "$phase_name")")
  phase_name=$1
  phase_began=$SECONDS
  [[ -n $phase_name ]] && log "== $phase_name"
  return 0
}
print_phase_times() {
  phase ""
  [[ ${#phase_times[@]} -gt 0 ]] || return 0
  echo "phase timings:"
  printf '  %s\n' "${phase_times[@]}"
  printf '  %6d s  total\n' "$((SECONDS - started))"
}

skip() {
  echo "SKIPPED: $*" >&8
  exit 77
}
fail() {
  echo "FAIL: $*" >&8
  exit 1
}

# Runs a command with what is left of the budget; out of time is a failure.
bounded() {
  local left=$((deadline - SECONDS)) code=0
  ((left > 0)) || fail "out of time ($budget_s s) before: $*"
  timeout --kill-after=10 "$left" "$@" || code=$?
  ((code != 124 && code != 137)) || fail "out of time ($budget_s s) during: $*"
  return "$code"
}
docker() { "$docker_cli" "$@"; }
compose_args=()
compose() { docker-compose "${compose_args[@]}" "$@"; }

check_prerequisites() {
  [[ $(id -u) -eq 0 ]] || skip "a Docker engine of its own needs root; running as uid $(id -u)"
  local tool
  for tool in dockerd docker-compose debootstrap python3 flock findmnt sha256sum timeout; do
    command -v "$tool" >/dev/null ||
      skip "$tool is not installed (scripts/test.sh installs the test tools: docker.io, debootstrap, docker-compose)"
  done
  python3 -c 'import yaml' 2>/dev/null || skip "python3-yaml is not installed"
  [[ -x $skewbench_bin ]] || fail "$skewbench_bin is not an executable skewbench"
  # The client packaged with the engine, wherever else another one may be.
  docker_cli=/usr/bin/docker
  [[ -x $docker_cli ]] || docker_cli=$(command -v docker) || skip "no docker client next to dockerd"
}

# --- cleanup ---------------------------------------------------------------

# PREFIX itself too: dockerd bind-mounts its data root onto itself.
mounts_under() { findmnt -rn -o TARGET | awk -v p="$1" '$0 == p || index($0, p "/") == 1' | sort -r; }
unmount_under() {
  local prefix=$1 target
  [[ -n $prefix ]] || return 0
  mounts_under "$prefix" | while read -r target; do
    umount "$target" 2>/dev/null || umount -l "$target" 2>/dev/null || true
  done
}

# Processes whose command line names PATH: dockerd's containerd and shims.
pids_naming() {
  local path=$1 proc args
  for proc in /proc/[0-9]*; do
    mapfile -d '' -t args 2>/dev/null <"$proc/cmdline" || continue
    [[ " ${args[*]} " == *"$path"* ]] && echo "${proc#/proc/}"
  done
  return 0
}

kill_strays() {
  local root=$1 pid
  [[ -n $root ]] || return 0
  for pid in $(pids_naming "$root"); do kill -KILL "$pid" 2>/dev/null || true; done
}

# Every container's cgroup lives under /NAME, NAME being the basename of the
# run's scratch directory (dockerd's --cgroup-parent), so a container process
# orphaned by a killed shim is found there too, and only this run's.
cgroup_dirs() {
  local name=$1
  compgen -G "/sys/fs/cgroup/*/$name" || compgen -G "/sys/fs/cgroup/$name" || true
}
cgroup_pids() {
  local group
  for group in $(cgroup_dirs "$1"); do find "$group" -name cgroup.procs -exec cat {} + 2>/dev/null; done | sort -u
  return 0
}
remove_cgroups() {
  local name=$1 pid group
  [[ -n $name ]] || return 0
  for pid in $(cgroup_pids "$name"); do kill -KILL "$pid" 2>/dev/null || true; done
  for group in $(cgroup_dirs "$name"); do
    find "$group" -depth -type d -exec rmdir {} + 2>/dev/null || true
  done
}

stop_dockerd() {
  [[ -n $dockerd_pid ]] || return 0
  kill -TERM "$dockerd_pid" 2>/dev/null || true
  local i
  for i in $(seq 60); do
    kill -0 "$dockerd_pid" 2>/dev/null || break
    sleep 0.5
  done
  if kill -0 "$dockerd_pid" 2>/dev/null; then
    log "dockerd did not stop within 30 s; killing it"
    kill -KILL "$dockerd_pid" 2>/dev/null || true
  fi
  wait "$dockerd_pid" 2>/dev/null || true
  dockerd_pid=""
  rm -f "$cache/engine"
}

remove_all_containers_and_volumes() {
  local ids
  ids=$(docker ps -aq 2>/dev/null) && [[ -n $ids ]] && docker rm -f $ids >/dev/null 2>&1
  ids=$(docker volume ls -q 2>/dev/null) && [[ -n $ids ]] && docker volume rm -f $ids >/dev/null 2>&1
  docker network prune -f >/dev/null 2>&1
  return 0
}

cleanup() {
  local code=$?
  trap - EXIT INT TERM
  set +e
  exec >&8 2>&1
  print_phase_times
  if [[ -n $dockerd_pid ]]; then
    [[ $code -ne 0 ]] && log "cleaning up after a failure"
    [[ ${#compose_args[@]} -gt 0 ]] && compose down --volumes --remove-orphans --timeout 5 >/dev/null 2>&1
    remove_all_containers_and_volumes
    stop_dockerd
  fi
  if [[ -n $work ]]; then
    kill_strays "$work/exec"
    unmount_under "$work"
    unmount_under "$data_root"
    remove_cgroups "${work##*/}"
    rm -rf "$work"
  fi
  log "exit $code"
  exit "$code"
}

# A run killed outright (SIGKILL, a CTest timeout) leaves its dockerd, shims and
# mounts behind; they are this test's own, recorded in $cache/engine.
reap_previous_engine() {
  [[ -f $cache/engine ]] || return 0
  local old_pid old_work
  read -r old_pid old_work <"$cache/engine" || true
  log "a previous run did not finish (dockerd $old_pid, $old_work); stopping what it left"
  if [[ -n $old_pid ]] && { tr '\0' ' ' <"/proc/$old_pid/cmdline"; } 2>/dev/null | grep -qF -- "--data-root $data_root "; then
    kill -KILL "$old_pid" 2>/dev/null || true
  fi
  if [[ $old_work == /tmp/skewbench-docker.* ]]; then
    kill_strays "$old_work/exec"
    unmount_under "$old_work"
    remove_cgroups "${old_work##*/}"
    rm -rf "$old_work"
  fi
  unmount_under "$data_root"
  rm -f "$cache/engine"
}

# --- the engine ------------------------------------------------------------

start_dockerd() {
  mkdir -p "$data_root"
  dockerd --data-root "$data_root" --exec-root "$work/exec" --pidfile "$work/dockerd.pid" \
    --host "unix://$work/docker.sock" --iptables=false --ip6tables=false --bridge=none \
    --storage-driver=overlay2 --exec-opt native.cgroupdriver=cgroupfs --cgroup-parent "/${work##*/}" \
    --containerd-namespace "$project" --containerd-plugins-namespace "$project-plugins" \
    >>"$work/dockerd.log" 2>&1 8>&- 9>&- &
  dockerd_pid=$!
  echo "$dockerd_pid $work" >"$cache/engine"
  local i
  for i in $(seq 120); do
    docker version >/dev/null 2>&1 && return 0
    kill -0 "$dockerd_pid" 2>/dev/null || break
    sleep 0.5
  done
  stop_dockerd
  return 1
}

start_engine() {
  export DOCKER_HOST="unix://$work/docker.sock" DOCKER_CONFIG="$work/docker-config"
  mkdir -p "$DOCKER_CONFIG"
  start_dockerd && return 0
  if [[ -n $(ls -A "$data_root" 2>/dev/null) ]]; then
    log "dockerd did not start on the cached data root; discarding it:"
    tail -n 5 "$work/dockerd.log"
    unmount_under "$data_root"
    rm -rf "$data_root"
    start_dockerd && return 0
  fi
  tail -n 20 "$work/dockerd.log"
  skip "dockerd cannot start on this machine: $(grep -E 'level=(fatal|error)|failed' "$work/dockerd.log" | tail -n 1)"
}

# --- images ----------------------------------------------------------------

ensure_rootfs_tarball() {
  local tarball=$cache/trixie-minbase.tar
  if [[ -f $tarball && -f $tarball.sha256 ]] && (cd "$cache" && sha256sum --status -c trixie-minbase.tar.sha256); then
    return 0
  fi
  [[ -f $tarball ]] && log "the cached $tarball is damaged; making it again"
  rm -f "$tarball" "$tarball.sha256"
  log "debootstrap --variant=minbase trixie (takes minutes)"
  if ! bounded debootstrap --variant=minbase trixie "$work/rootfs" http://deb.debian.org/debian >"$work/debootstrap.log" 2>&1; then
    tail -n 30 "$work/debootstrap.log"
    fail "debootstrap failed"
  fi
  tar --numeric-owner -C "$work/rootfs" -cf "$tarball.partial" .
  rm -rf "$work/rootfs"
  (cd "$cache" && sha256sum trixie-minbase.tar.partial | sed 's/\.partial$//' >trixie-minbase.tar.sha256.partial)
  mv "$tarball.partial" "$tarball"
  mv "$tarball.sha256.partial" "$tarball.sha256"
}

ensure_base_image() {
  if docker image inspect debian:trixie-slim >/dev/null 2>&1 &&
    docker run --rm --network none debian:trixie-slim true >/dev/null 2>&1; then
    log "debian:trixie-slim: cached"
    return 0
  fi
  ensure_rootfs_tarball
  docker rmi -f debian:trixie-slim >/dev/null 2>&1 || true
  bounded "$docker_cli" import "$cache/trixie-minbase.tar" debian:trixie-slim >/dev/null
  docker run --rm --network none debian:trixie-slim true || fail "the imported debian:trixie-slim does not run"
  log "debian:trixie-slim: imported from the debootstrap tarball"
}

# Prefixes every line with the seconds since the test started.
timestamp_lines() {
  local line
  while IFS= read -r line; do printf '%d %s\n' "$((SECONDS - started))" "$line"; done
}

# The Dockerfile steps that took 10 s or more, slowest first, from a build log
# whose lines timestamp_lines has prefixed.
slow_steps() {
  awk -v end="$((SECONDS - started))" '
    $2 == "Step" { if (step != "") print $1 - began, step; began = $1; $1 = ""; step = substr($0, 2, 90) }
    END { if (step != "") print end - began, step }' "$1" | sort -rn | awk '$1 >= 10 { printf "  %5d s  %s\n", $1, substr($0, index($0, " ") + 1) }'
}

build_image() {
  local tag=$1 context=$2 began=$SECONDS
  shift 2
  log "docker build $tag"
  if ! DOCKER_BUILDKIT=0 bounded "$docker_cli" build --network host --force-rm --tag "$tag" "$@" "$context" 2>&1 |
    timestamp_lines >"$work/build.log"; then
    tail -n 60 "$work/build.log"
    fail "docker build of $tag failed"
  fi
  log "built $tag in $((SECONDS - began)) s ($(grep -c '^[0-9]*  ---> Using cache' "$work/build.log") steps from the layer cache)"
  slow_steps "$work/build.log"
}

# --- the compose run -------------------------------------------------------

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

prepare_project() {
  mkdir -p "$work/project/results"
  chown "$results_uid:$results_gid" "$work/project/results"
  SKEWBENCH_TEST_POSTGRES_PORT=$(free_port)
  SKEWBENCH_TEST_REMOTE_PORT=$(free_port)
  while [[ $SKEWBENCH_TEST_REMOTE_PORT == "$SKEWBENCH_TEST_POSTGRES_PORT" ]]; do SKEWBENCH_TEST_REMOTE_PORT=$(free_port); done
  export SKEWBENCH_TEST_POSTGRES_PORT SKEWBENCH_TEST_REMOTE_PORT SKEWBENCH_GIT_COMMIT=$commit
  log "PostgreSQL on 127.0.0.1:$SKEWBENCH_TEST_POSTGRES_PORT, remote-effect on 127.0.0.1:$SKEWBENCH_TEST_REMOTE_PORT"
  docker-compose --project-directory "$work/project" --file "$src/docker-compose.yml" config >"$work/shipped.yml"
  compose config >"$work/overridden.yml"
  python3 "$here/check_run.py" config "$work/shipped.yml" "$work/overridden.yml" || fail "the override is not what this test promises"
}

only_default_networks() {
  local extra
  extra=$(docker network ls --format '{{.Name}}' | grep -vxE 'host|none' || true)
  [[ -z $extra ]] || fail "networks were created: $extra"
}

compose_up() {
  local began=$SECONDS code=0
  log "docker-compose up --exit-code-from skewbench"
  local left=$((deadline - SECONDS))
  ((left < compose_up_s)) || left=$compose_up_s
  ((left > 0)) || fail "out of time ($budget_s s) before docker-compose up"
  timeout --kill-after=10 "$left" docker-compose "${compose_args[@]}" up --no-build --no-color --exit-code-from skewbench \
    >"$work/compose-up.log" 2>&1 || code=$?
  grep -E '^(skewbenchdockertest[-_])?skewbench[-_]1 +[|]' "$work/compose-up.log" | tail -n 40 || true
  log "docker-compose up exited $code after $((SECONDS - began)) s"
  if [[ $code -ne 0 ]]; then
    tail -n 80 "$work/compose-up.log"
    ((code != 124 && code != 137)) || fail "docker-compose up did not end within $left s"
    fail "docker-compose up exited $code, expected 0 (skewbench's exit code)"
  fi
  only_default_networks
  echo "ok: docker-compose up exited 0; no network was created"
}

check_evidence() {
  local results=$work/project/results
  python3 "$here/check_run.py" evidence "$results" "$results_uid" "$results_gid" "$commit" "$src/scenarios" ||
    fail "the evidence written by the skewbench container"
  run_dir=$results/$(readlink "$results/latest")
  local dir
  for dir in "$run_dir" "$run_dir-016" "$run_dir-real-clocks"; do
    "$skewbench_bin" verify "$dir" || fail "skewbench verify rejects $dir"
  done
  # The check itself must be able to fail: a copy with one file owned by root.
  cp -a "$results" "$work/results-copy"
  chown 0:0 "$(find "$work/results-copy/runs" -name result-016.json -print -quit)"
  if python3 "$here/check_run.py" evidence "$work/results-copy" "$results_uid" "$results_gid" "$commit" "$src/scenarios" >/dev/null; then
    fail "the evidence check accepted a result-016.json owned by root"
  fi
  rm -rf "$work/results-copy"
  echo "ok: the evidence check rejects a copy with one file owned by root"
}

wait_healthy() {
  local container=$1 state i
  for i in $(seq 90); do
    state=$(docker inspect -f '{{.State.Health.Status}}' "$container" 2>/dev/null || echo gone)
    [[ $state == healthy ]] && return 0
    sleep 1
  done
  docker logs "$container" 2>&1 | tail -n 20
  fail "container $container is $state after 90 s"
}

remote_effect_volume() {
  docker inspect -f '{{range .Mounts}}{{if eq .Destination "/data"}}{{.Type}}:{{.Name}}{{end}}{{end}}' "$1"
}

replace_remote_effect() {
  local before after volume
  before=$(compose ps -q remote-effect)
  compose rm --stop --force remote-effect >/dev/null 2>&1
  compose up -d --no-build --no-deps remote-effect >/dev/null 2>&1 || fail "remote-effect did not start again"
  after=$(compose ps -q remote-effect)
  [[ -n $after && $after != "$before" ]] || fail "remote-effect was not replaced by a new container"
  volume=$(remote_effect_volume "$after")
  [[ $volume == "volume:${project}_remote-effect-state" ]] || fail "remote-effect's /data is $volume, not the named volume"
  wait_healthy "$after"
}

# compose stopped the remote-effect that ran the scenarios. A new container on
# the named volume must report what the evidence says; a second one must report
# exactly what the first did (effects, key records, POSTs, temporal epoch).
check_state_survives() {
  local remote_url="http://127.0.0.1:$SKEWBENCH_TEST_REMOTE_PORT"
  replace_remote_effect
  python3 "$here/check_run.py" snapshot "$run_dir" "$remote_url" "$work/remote-state.json" ||
    fail "a new remote-effect container does not have the run's state from the named volume"
  replace_remote_effect
  python3 "$here/check_run.py" survived "$work/remote-state.json" "$remote_url" ||
    fail "the remote-effect's state did not survive a second replacement"
}

check_down_removes_everything() {
  compose down --volumes --remove-orphans --timeout 10 >/dev/null 2>&1 || fail "docker-compose down --volumes failed"
  # The state must be gone with the volume: a new remote-effect has none of it,
  # which also shows the state check above can fail.
  compose up -d --no-build --no-deps remote-effect >/dev/null 2>&1 || fail "remote-effect did not start after down"
  wait_healthy "$(compose ps -q remote-effect)"
  if python3 "$here/check_run.py" survived "$work/remote-state.json" "http://127.0.0.1:$SKEWBENCH_TEST_REMOTE_PORT" >/dev/null; then
    fail "remote-effect still has the run's state after down --volumes"
  fi
  compose down --volumes --remove-orphans --timeout 10 >/dev/null 2>&1 || fail "docker-compose down --volumes failed"
  [[ -z $(docker ps -aq) ]] || fail "containers left after down --volumes: $(docker ps -a --format '{{.Names}}')"
  [[ -z $(docker volume ls -q) ]] || fail "volumes left after down --volumes: $(docker volume ls -q | tr '\n' ' ')"
  only_default_networks
  echo "ok: after down --volumes a new remote-effect starts empty; no container, volume or network is left"
}

check_engine_gone() {
  stop_dockerd
  # dockerd 20.10 leaves the bind mount of the host's network namespace (made
  # for the host-network containers) in its exec root when it stops.
  if findmnt -rn -o TARGET | grep -qxF "$work/exec/netns/default"; then umount "$work/exec/netns/default"; fi
  local mounts pids
  mounts=$(mounts_under "$work"; mounts_under "$data_root")
  pids=$(pids_naming "$work/exec")
  [[ -z $mounts ]] || fail "mounts left after dockerd stopped: $mounts"
  [[ -z $pids ]] || fail "processes left after dockerd stopped: $pids"
  pids=$(cgroup_pids "${work##*/}")
  [[ -z $pids ]] || fail "container processes left after dockerd stopped: $pids"
  remove_cgroups "${work##*/}"
  [[ -z $(cgroup_dirs "${work##*/}") ]] || fail "cgroups left after dockerd stopped: $(cgroup_dirs "${work##*/}")"
  echo "ok: dockerd stopped; no mount or process of it is left"
}

# The commit recorded in the image: the one that last changed an image input,
# so that a commit touching none (docs, tests) reuses the cached image whole
# instead of compiling again for a new build argument. With uncommitted changes
# to an input, HEAD, as `git rev-parse HEAD` would give.
image_commit() {
  if ! git -C "$src" rev-parse --verify -q HEAD >/dev/null 2>&1; then
    echo unknown
  elif [[ -n $(git -C "$src" status --porcelain -- "${image_inputs[@]}") ]]; then
    git -C "$src" rev-parse HEAD
  else
    git -C "$src" log -1 --format=%H HEAD -- "${image_inputs[@]}"
  fi
}

hold_cache_lock() {
  mkdir -p "$cache"
  exec 9>"$cache/lock"
  flock -n 9 && return 0
  log "another docker test holds $cache; waiting up to $lock_wait_s s"
  flock -w "$lock_wait_s" 9 || fail "$cache stayed locked for $lock_wait_s s (another docker test is running)"
}

build_images() {
  phase "base image debian:trixie-slim"
  ensure_base_image
  phase "docker build postgres:17.6 stand-in"
  build_image postgres:17.6 "$here/postgres-standin"
  phase "docker build skewbench:local (commit $commit)"
  # The build stage is tagged too: untagged, the prune below would drop its
  # layers (they are no parents of the runtime image) and with them the cache.
  build_image skewbench-build:cache "$src" --target build --build-arg "SKEWBENCH_GIT_COMMIT=$commit"
  build_image skewbench:local "$src" --build-arg "SKEWBENCH_GIT_COMMIT=$commit"
  bounded "$docker_cli" image prune -f >/dev/null
}

main() {
  check_prerequisites
  phase "waiting for the cache lock"
  hold_cache_lock
  reap_previous_engine
  work=$(mktemp -d /tmp/skewbench-docker.XXXXXX)
  trap cleanup EXIT
  trap 'exit 130' INT TERM
  commit=$(image_commit)
  compose_args=(--project-directory "$work/project" --project-name "$project"
    --file "$src/docker-compose.yml" --file "$here/compose.host-network.yml")

  phase "start dockerd"
  start_engine
  log "dockerd $(docker version -f '{{.Server.Version}}') on $data_root"
  remove_all_containers_and_volumes
  build_images
  phase "docker-compose up"
  prepare_project
  compose_up
  phase "check the evidence"
  check_evidence
  phase "replace remote-effect twice"
  check_state_survives
  phase "down --volumes"
  check_down_removes_everything
  phase "stop dockerd"
  check_engine_gone
  log "PASS"
}

# One line, so that bash has read all it will run before main starts.
main "$@"; exit
