#!/usr/bin/env bash
# The last test of the suite (a FIXTURES_CLEANUP test every other test
# requires, run alone): no process the suite started is left, and nothing it
# started still listens.
#
#   check_leftovers.sh BIN_DIR MARK
#
# What the suite started: every process whose environment holds MARK (CTest
# gives each test SKEWBENCH_TEST_SUITE=<build tree>, and what a test starts
# inherits it), every process whose executable lies in BIN_DIR (the build's
# skewbench, remote-effect and test programs, also when started with an
# environment of their own), and the fault tests' services
# (tests/faults/*.py). Each TCP socket one of them listens on is named with
# it. Nothing is signalled: this only reads /proc. A process that is ending is
# given 5 s.
# Exit codes: 0 none left, 1 leftovers (each named).
set -euo pipefail

bin_dir=$(realpath "${1:?usage: check_leftovers.sh BIN_DIR MARK}")
mark=${2:?usage: check_leftovers.sh BIN_DIR MARK}

# pid and command line of each leftover, one per line.
leftovers() {
  local dir pid exe cmdline state
  for dir in /proc/[0-9]*; do
    pid=${dir#/proc/}
    [[ $pid == "$$" || $pid == "$BASHPID" ]] && continue
    state=$(awk '{print $3}' "$dir/stat" 2>/dev/null) || continue
    [[ $state == Z ]] && continue
    exe=$(readlink "$dir/exe" 2>/dev/null) || exe=
    cmdline=$(tr '\0' ' ' 2>/dev/null <"$dir/cmdline") || cmdline=
    if [[ $exe == "$bin_dir"/* || $cmdline == *tests/faults/*.py* ]] ||
      grep -qzxF -- "$mark" "$dir/environ" 2>/dev/null; then
      echo "$pid $cmdline"
    fi
  done
}

# The listening sockets (local address) of a process, from /proc/net/tcp{,6}.
listening_of() {
  local pid=$1 inode
  for inode in $(find "/proc/$pid/fd" -lname 'socket:*' -printf '%l\n' 2>/dev/null | tr -dc '0-9\n'); do
    awk -v inode="$inode" '$4 == "0A" && $10 == inode {print $2}' /proc/net/tcp /proc/net/tcp6
  done
}

found=$(leftovers)
give_up_at=$((SECONDS + 5))
while [[ -n "$found" && $SECONDS -lt $give_up_at ]]; do
  sleep 0.2
  found=$(leftovers)
done
if [[ -n "$found" ]]; then
  echo "FAIL: the test suite left these processes behind:"
  while read -r pid rest; do
    echo "  pid $pid: $rest"
    for address in $(listening_of "$pid"); do echo "    listening on $address (hex address:port)"; done
  done <<<"$found"
  exit 1
fi
echo "ok: no process the test suite started is left, and none of its sockets listens"
