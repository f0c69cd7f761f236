# The npm packages of the targets (targets/package.json, pinned by
# targets/package-lock.json). Sourced by setup.sh, not run.
#
#   skewbench_install_targets   npm ci in targets/, from npm's cache in
#                               <cache>/npm when it holds the packages; nothing
#                               when node_modules already matches the lock file.
#                               Install scripts stay off: the one native
#                               module (classic-level, for dynalite) ships
#                               prebuilt binaries. Exits 3 when npm fails.

skewbench_install_targets() {
  local dir="$SKEWBENCH_ROOT/targets"
  local marker="$dir/node_modules/.skewbench-lock-sha256"
  local want
  want=$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)
  if [[ -f "$marker" && "$(cat "$marker")" == "$want" ]]; then
    skewbench_log "targets: node_modules matches targets/package-lock.json"
    return 0
  fi
  command -v npm >/dev/null || { skewbench_log "targets: npm is not installed (apt-get install npm)"; exit 3; }
  local cache
  cache="$(skewbench_postgres_cache_dir)/npm"
  mkdir -p "$cache"
  skewbench_log "targets: npm ci in targets/ (cache $cache)"
  if ! (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --prefer-offline --cache "$cache" >"$cache/last-npm-ci.log" 2>&1); then
    tail -n 30 "$cache/last-npm-ci.log" >&2
    skewbench_log "targets: npm ci failed; full log: $cache/last-npm-ci.log"
    exit 3
  fi
  printf '%s\n' "$want" >"$marker"
}
