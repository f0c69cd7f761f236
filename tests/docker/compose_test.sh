#!/usr/bin/env bash
# Runs the shipped docker-compose.yml for real, on a Docker engine of its own.
#
#   compose_test.sh SOURCE_DIR
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
# 4. Checks skewbench's exit code, the evidence the container wrote (10/10) and
#    that every file it wrote belongs to the owner of ./results.
# 5. Replaces the remote-effect container and checks that the new process still
#    has every effect the run made, from the named volume; after `down --volumes`
#    a new container must have none, and no container, volume or network is left.
# 6. Stops dockerd and checks that no mount or process of it remains.
#
# The debootstrap tarball and dockerd's data root (images and build cache) are
# kept in $SKEWBENCH_DOCKER_CACHE (default ${XDG_CACHE_HOME:-~/.cache}/skewbench/docker),
# so a second run only rebuilds what changed; a damaged tarball (checksum) or a
# data root dockerd cannot start on is discarded and rebuilt. One run at a time
# uses a cache (flock). Whatever happens, the exit trap removes the containers,
# volumes, dockerd, its mounts and the scratch directory.
#
# Exit codes: 0 pass; 1 a check failed; 77 skipped (not root, a tool missing, or
# dockerd cannot start on this machine): the reason is printed.
set -euo pipefail

src=$(cd "${1:?usage: compose_test.sh SOURCE_DIR}" && pwd)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PATH="$PATH:/usr/sbin:/sbin"
project=skewbenchdockertest
# Owner of the scratch ./results: neither root nor the image's skewbench user,
# so files the container failed to hand over are caught.
results_uid=54321
results_gid=54321

cache=${SKEWBENCH_DOCKER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/skewbench/docker}
data_root=$cache/data-root
work=""
dockerd_pid=""
started=$SECONDS

log() { printf '[docker-test %s +%ss] %s\n' "$(date -u +%H:%M:%S)" "$((SECONDS - started))" "$*"; }
skip() {
  echo "SKIPPED: $*"
  exit 77
}
fail() {
  echo "FAIL: $*"
  exit 1
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
    >>"$work/dockerd.log" 2>&1 9>&- &
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
  if ! debootstrap --variant=minbase trixie "$work/rootfs" http://deb.debian.org/debian >"$work/debootstrap.log" 2>&1; then
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
  docker import "$cache/trixie-minbase.tar" debian:trixie-slim >/dev/null
  docker run --rm --network none debian:trixie-slim true || fail "the imported debian:trixie-slim does not run"
  log "debian:trixie-slim: imported from the debootstrap tarball"
}

build_image() {
  local tag=$1 context=$2 began=$SECONDS
  shift 2
  log "docker build $tag"
  if ! DOCKER_BUILDKIT=0 docker build --network host --force-rm --tag "$tag" "$@" "$context" >"$work/build.log" 2>&1; then
    tail -n 60 "$work/build.log"
    fail "docker build of $tag failed"
  fi
  log "built $tag in $((SECONDS - began)) s"
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
  timeout 900 docker-compose "${compose_args[@]}" up --no-build --no-color --exit-code-from skewbench >"$work/compose-up.log" 2>&1 || code=$?
  grep -E '^(skewbenchdockertest[-_])?skewbench[-_]1 +[|]' "$work/compose-up.log" | tail -n 20 || true
  log "docker-compose up exited $code after $((SECONDS - began)) s"
  if [[ $code -ne 0 ]]; then
    tail -n 80 "$work/compose-up.log"
    fail "docker-compose up exited $code, expected 0 (skewbench's exit code)"
  fi
  only_default_networks
  echo "ok: docker-compose up exited 0; no network was created"
}

check_evidence() {
  python3 "$here/check_run.py" evidence "$work/project/results" "$results_uid" "$results_gid" "$commit" ||
    fail "the evidence written by the skewbench container"
  # The check itself must be able to fail: a copy with one file owned by root.
  cp -a "$work/project/results" "$work/results-copy"
  chown 0:0 "$(find "$work/results-copy/runs" -name result.json)"
  if python3 "$here/check_run.py" evidence "$work/results-copy" "$results_uid" "$results_gid" "$commit" >/dev/null; then
    fail "the evidence check accepted a result.json owned by root"
  fi
  rm -rf "$work/results-copy"
  run_dir=$(echo "$work/project/results/runs/"*-compose-*)
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

check_state_survives() {
  local before after volume
  before=$(compose ps -q remote-effect)
  compose rm --stop --force remote-effect >/dev/null 2>&1
  compose up -d --no-build --no-deps remote-effect >/dev/null 2>&1 || fail "remote-effect did not start again"
  after=$(compose ps -q remote-effect)
  [[ -n $after && $after != "$before" ]] || fail "remote-effect was not replaced by a new container"
  volume=$(remote_effect_volume "$after")
  [[ $volume == "volume:${project}_remote-effect-state" ]] || fail "remote-effect's /data is $volume, not the named volume"
  wait_healthy "$after"
  python3 "$here/check_run.py" remote-state "$run_dir" "http://127.0.0.1:$SKEWBENCH_TEST_REMOTE_PORT" ||
    fail "the remote-effect's state did not survive on the named volume $volume"
}

check_down_removes_everything() {
  compose down --volumes --remove-orphans --timeout 10 >/dev/null 2>&1 || fail "docker-compose down --volumes failed"
  # The state must be gone with the volume: a new remote-effect has none of it,
  # which also shows the state check above can fail.
  compose up -d --no-build --no-deps remote-effect >/dev/null 2>&1 || fail "remote-effect did not start after down"
  wait_healthy "$(compose ps -q remote-effect)"
  if python3 "$here/check_run.py" remote-state "$run_dir" "http://127.0.0.1:$SKEWBENCH_TEST_REMOTE_PORT" >/dev/null; then
    fail "remote-effect still has the run's effects after down --volumes"
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

main() {
  check_prerequisites
  mkdir -p "$cache"
  exec 9>"$cache/lock"
  if ! flock -n 9; then
    log "another docker test holds $cache; waiting"
    flock -w 3000 9 || fail "$cache stayed locked for 50 minutes"
  fi
  reap_previous_engine
  work=$(mktemp -d /tmp/skewbench-docker.XXXXXX)
  trap cleanup EXIT
  trap 'exit 130' INT TERM
  commit=$(git -C "$src" rev-parse HEAD 2>/dev/null || echo unknown)
  compose_args=(--project-directory "$work/project" --project-name "$project"
    --file "$src/docker-compose.yml" --file "$here/compose.host-network.yml")

  start_engine
  log "dockerd $(docker version -f '{{.Server.Version}}') on $data_root"
  remove_all_containers_and_volumes
  ensure_base_image
  build_image postgres:17.6 "$here/postgres-standin"
  # The build stage is tagged too: untagged, the prune below would drop its
  # layers (they are no parents of the runtime image) and with them the cache.
  build_image skewbench-build:cache "$src" --target build --build-arg "SKEWBENCH_GIT_COMMIT=$commit"
  build_image skewbench:local "$src" --build-arg "SKEWBENCH_GIT_COMMIT=$commit"
  docker image prune -f >/dev/null

  prepare_project
  compose_up
  check_evidence
  check_state_survives
  check_down_removes_everything
  check_engine_gone
  log "PASS"
}

# One line, so that bash has read all it will run before main starts.
main "$@"; exit
