#!/usr/bin/env bash
# Validates docker-compose.yml offline with `docker-compose config -q` (Debian's
# docker-compose package, Compose v1, which reads the Compose specification).
# No Docker engine is needed; nothing is built or started.
#
#   check_compose.sh COMPOSE_FILE
#
# First it proves the validator can fail: a copy whose depends_on condition is
# misspelled must be rejected. Then the real file must pass, and its resolved
# form must still have what issue #4 asks for (PostgreSQL 17.6, healthchecks,
# skewbench waiting for both services, the named volume, the ./results mount).
# Exit codes: 0 valid, 1 invalid (or the validator accepted the broken copy),
# 77 docker-compose is not installed (CTest reports the test as skipped).
set -euo pipefail

compose_file=${1:?usage: check_compose.sh COMPOSE_FILE}
compose=${DOCKER_COMPOSE:-docker-compose}

if ! command -v "$compose" >/dev/null; then
  echo "SKIPPED: $compose is not installed (apt-get install docker-compose); compose file not validated"
  exit 77
fi
echo "validator: $("$compose" version --short 2>/dev/null || "$compose" --version)"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# Negative self-check. The copy sits in its own directory so that `build: .`
# still names an existing directory and the misspelling is the only fault.
sed 's/condition: service_healthy/condition: service_happy/' "$compose_file" >"$scratch/docker-compose.yml"
if cmp -s "$compose_file" "$scratch/docker-compose.yml"; then
  echo "FAIL: found no 'condition: service_healthy' to break; update this check with the compose file"
  exit 1
fi
if "$compose" -f "$scratch/docker-compose.yml" config -q >"$scratch/broken.log" 2>&1; then
  echo "FAIL: $compose accepted a compose file with an unknown depends_on condition"
  exit 1
fi
if ! grep -q 'service_happy' "$scratch/broken.log"; then
  echo "FAIL: $compose rejected the broken copy, but not for the planted fault:"
  cat "$scratch/broken.log"
  exit 1
fi
echo "ok: the broken copy is rejected: $(tr -s '\n' ' ' <"$scratch/broken.log")"

# The real file. Unset variables fall back to their ${VAR:-default}s.
if ! "$compose" -f "$compose_file" config -q; then
  echo "FAIL: $compose_file is not a valid compose file"
  exit 1
fi
echo "ok: $compose_file is valid"

# What the schema cannot know. The resolved configuration is read with PyYAML,
# which docker-compose itself depends on.
"$compose" -f "$compose_file" config >"$scratch/resolved.yml"
python3 - "$scratch/resolved.yml" <<'PY'
import sys
import yaml

config = yaml.safe_load(open(sys.argv[1]))
services = config.get("services", {})
failures = []

def require(condition, message):
    if not condition:
        failures.append(message)

for name in ("postgres", "remote-effect", "skewbench"):
    require(name in services, f"no service {name!r}")
if not failures:
    postgres, remote, runner = services["postgres"], services["remote-effect"], services["skewbench"]
    require(postgres.get("image") == "postgres:17.6", "postgres must use image postgres:17.6")
    require("pg_isready" in " ".join(postgres.get("healthcheck", {}).get("test", [])),
            "postgres needs a pg_isready healthcheck")
    require("/health" in " ".join(remote.get("healthcheck", {}).get("test", [])),
            "remote-effect needs a healthcheck on /health")
    require("build" in remote and "build" in runner,
            "remote-effect and skewbench are both built from this repository")
    require("0.0.0.0" in " ".join(remote.get("command", [])), "remote-effect must listen on 0.0.0.0")
    named_volumes = set(config.get("volumes", {}) or {})
    require(any(str(v).split(":")[0] in named_volumes for v in remote.get("volumes", [])),
            "remote-effect keeps its SQLite state on a named volume")
    for dependency in ("postgres", "remote-effect"):
        condition = runner.get("depends_on", {}).get(dependency, {}).get("condition")
        require(condition == "service_healthy", f"skewbench must wait for {dependency} to be healthy")
    require(any(str(v).endswith(":/results") or ":/results:" in str(v) for v in runner.get("volumes", [])),
            "skewbench writes to ./results through a bind mount on /results")

for failure in failures:
    print(f"FAIL: {failure}")
sys.exit(1 if failures else 0)
PY
echo "ok: the resolved configuration has the services, healthchecks, volumes and mount issue #4 asks for"
