#!/bin/bash
# Entrypoint of the postgres:17.6 stand-in (see Dockerfile). Like the official
# image's: on the first start it initialises $PGDATA with the superuser
# POSTGRES_USER (password POSTGRES_PASSWORD, scram-sha-256 over TCP) and creates
# POSTGRES_DB; then it runs the server as the postgres user. Arguments starting
# with "-" are passed to postgres; any other command is run as given.
set -euo pipefail

: "${PGDATA:=/var/lib/postgresql/data}"
: "${POSTGRES_USER:=postgres}"
: "${POSTGRES_DB:=$POSTGRES_USER}"

if [[ "${1:-}" == -* ]]; then set -- postgres "$@"; fi
if [[ "${1:-}" != postgres ]]; then exec "$@"; fi

if [[ $(id -u) -eq 0 ]]; then
  # A fresh named volume may come up owned by root; the server refuses that.
  mkdir -p "$PGDATA"
  chown postgres:postgres "$PGDATA"
  chmod 700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi

initialise() {
  if [[ -z "${POSTGRES_PASSWORD:-}" ]]; then
    echo "docker-entrypoint.sh: POSTGRES_PASSWORD is required to initialise $PGDATA" >&2
    exit 1
  fi
  local pwfile
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
  initdb --pgdata="$PGDATA" --username="$POSTGRES_USER" --pwfile="$pwfile" \
    --auth-local=trust --auth-host=scram-sha-256
  rm -f "$pwfile"
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  echo "listen_addresses = '*'" >>"$PGDATA/postgresql.conf"
  # A temporary server on a private socket only, so that nothing counts it as
  # ready (the compose healthcheck asks over TCP).
  pg_ctl --pgdata="$PGDATA" --wait \
    --options="-c listen_addresses='' -c unix_socket_directories=/tmp" start
  if [[ "$POSTGRES_DB" != postgres ]]; then
    psql --host=/tmp --username="$POSTGRES_USER" --dbname=postgres --set=ON_ERROR_STOP=1 \
      --set=db="$POSTGRES_DB" <<<'CREATE DATABASE :"db";'
  fi
  pg_ctl --pgdata="$PGDATA" --wait --mode=fast stop
}

if [[ ! -s "$PGDATA/PG_VERSION" ]]; then initialise; fi
exec "$@"
