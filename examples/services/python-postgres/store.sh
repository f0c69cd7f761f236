#!/bin/sh
# The example's PostgreSQL server: one cluster in STORE_DIR/data, created on
# the first start, listening on 127.0.0.1:PORT, in the foreground.
#
#   store.sh PORT STORE_DIR
#
# The server binaries are the distribution's (apt-get install postgresql):
# $PG_BINDIR, else `pg_config --bindir`, else the newest /usr/lib/postgresql/*/bin.
set -eu
port=${1:?usage: store.sh PORT STORE_DIR}
dir=${2:?usage: store.sh PORT STORE_DIR}
bindir=${PG_BINDIR:-}
if [ -z "$bindir" ]; then
  bindir=$(pg_config --bindir 2>/dev/null || true)
  [ -x "$bindir/initdb" ] || bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
fi
if [ ! -x "$bindir/initdb" ] || [ ! -x "$bindir/postgres" ]; then
  echo "store.sh: no PostgreSQL server binaries (apt-get install postgresql, or set PG_BINDIR)" >&2
  exit 3
fi
data=$dir/data
if [ ! -f "$data/PG_VERSION" ]; then
  rm -rf "$data"
  "$bindir/initdb" -D "$data" -A trust -U postgres -E UTF8 --locale=C --no-sync >&2
fi
# After a crash (SIGKILL) the old server's backends end on their own once they
# see it gone; a new server refuses to start while they still hold its shared
# memory. Wait for them (10 s at most), as an operator restarting it would.
if [ -f "$data/postmaster.pid" ]; then
  segment=$(sed -n 7p "$data/postmaster.pid" | awk '{print $2}')
  tries=0
  while [ -n "$segment" ] && [ "$tries" -lt 100 ] &&
    [ "$(awk -v id="$segment" '$2 == id { print $7 }' /proc/sysvipc/shm)" -gt 0 ] 2>/dev/null; do
    sleep 0.1
    tries=$((tries + 1))
  done
fi
exec "$bindir/postgres" -D "$data" -p "$port" -c listen_addresses=127.0.0.1 -c unix_socket_directories="$dir"
