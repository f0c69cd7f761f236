#!/bin/sh
# port_taken_once.sh DIR PORT COMMAND...: a service's start on a machine where
# another process takes the port skewbench chose for it before it binds it.
# The first time (DIR/asked absent) it writes PORT to DIR/asked and waits (at
# most 60 s) for DIR/held, which the test writes once it holds the port; then
# it runs COMMAND, whose bind fails. Each later time it runs COMMAND at once.
dir=$1
port=$2
shift 2
if [ ! -e "$dir/asked" ]; then
  echo "$port" > "$dir/asked.tmp" && mv "$dir/asked.tmp" "$dir/asked"
  i=0
  while [ ! -e "$dir/held" ] && [ $i -lt 1200 ]; do
    sleep 0.05
    i=$((i + 1))
  done
fi
exec "$@"
