#!/usr/bin/env bash
# Runs the remote-effect service exactly as docker-compose.yml starts it (its
# command line, with only the port and the state file moved to a scratch place)
# from the binary just built, and runs the compose healthcheck against it.
# The image has no curl, so the healthcheck is a bash /dev/tcp probe; this is
# the one piece of the compose file that no schema check can judge, and a probe
# that never succeeds would leave `docker compose up` waiting forever.
#
#   check_compose_healthcheck.sh COMPOSE_FILE REMOTE_EFFECT_BIN
#
# The probe must succeed while the service runs and fail once it has stopped.
# Exit codes: 0 pass, 1 fail, 77 docker-compose is not installed (skipped).
set -euo pipefail

compose_file=${1:?usage: check_compose_healthcheck.sh COMPOSE_FILE REMOTE_EFFECT_BIN}
remote_effect=${2:?usage: check_compose_healthcheck.sh COMPOSE_FILE REMOTE_EFFECT_BIN}
compose=${DOCKER_COMPOSE:-docker-compose}

if ! command -v "$compose" >/dev/null; then
  echo "SKIPPED: $compose is not installed (apt-get install docker-compose); healthcheck not checked"
  exit 77
fi

scratch=$(mktemp -d)
service_pid=
cleanup() {
  if [[ -n "$service_pid" ]]; then kill "$service_pid" 2>/dev/null || true; fi
  rm -rf "$scratch"
}
trap cleanup EXIT

# Compose resolves the file; Python (PyYAML comes with docker-compose) lifts out
# the service's command and healthcheck, NUL-separated so quoting survives.
"$compose" -f "$compose_file" config >"$scratch/resolved.yml"
python3 - "$scratch/resolved.yml" "$scratch" <<'PY'
import sys
import yaml

service = yaml.safe_load(open(sys.argv[1]))["services"]["remote-effect"]
scratch = sys.argv[2]
command = list(service["command"])
test = list(service["healthcheck"]["test"])

def replace_option(argv, name, value):
    hits = [i for i, arg in enumerate(argv) if arg.startswith(name + "=")]
    if len(hits) != 1:
        sys.exit(f"FAIL: the remote-effect command must give {name}=VALUE exactly once; update this check")
    argv[hits[0]] = f"{name}={value}"

if command[0] != "remote-effect":
    sys.exit(f"FAIL: the remote-effect service runs {command[0]!r}, not remote-effect")
replace_option(command, "--port", "0")
replace_option(command, "--state-db", f"{scratch}/remote-effect.sqlite3")
if test[0] != "CMD" or test[1:3] != ["bash", "-c"] or test[3].count("/dev/tcp/127.0.0.1/8080") != 1:
    sys.exit("FAIL: expected the healthcheck ['CMD', 'bash', '-c', '... /dev/tcp/127.0.0.1/8080 ...']; update this check")
with open(f"{scratch}/command", "w") as f:
    f.write("\0".join(command[1:]) + "\0")
with open(f"{scratch}/probe", "w") as f:
    f.write(test[3])
PY
mapfile -d '' -t service_args <"$scratch/command"
probe_template=$(<"$scratch/probe")

echo "starting: $remote_effect ${service_args[*]}"
"$remote_effect" "${service_args[@]}" >"$scratch/stdout" 2>"$scratch/stderr" &
service_pid=$!
port=
for _ in $(seq 1 100); do
  port=$(grep -o '"port":[0-9]*' "$scratch/stdout" | head -n 1 | cut -d: -f2 || true)
  [[ -n "$port" ]] && break
  if ! kill -0 "$service_pid" 2>/dev/null; then break; fi
  sleep 0.1
done
if [[ -z "$port" ]]; then
  echo "FAIL: remote-effect did not print its ready line; stderr:"
  cat "$scratch/stderr"
  exit 1
fi

probe=${probe_template//\/dev\/tcp\/127.0.0.1\/8080//dev/tcp/127.0.0.1/$port}
if ! timeout 10 bash -c "$probe"; then
  echo "FAIL: the compose healthcheck does not pass against a running remote-effect (port $port)"
  exit 1
fi
echo "ok: the compose healthcheck passes against the running service"

kill -TERM "$service_pid"
wait "$service_pid" || true
service_pid=
if timeout 10 bash -c "$probe" 2>/dev/null; then
  echo "FAIL: the compose healthcheck passes with no service listening"
  exit 1
fi
echo "ok: the compose healthcheck fails once the service has stopped"
