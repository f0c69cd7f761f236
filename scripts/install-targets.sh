#!/usr/bin/env bash
# Installs what the targets need (docs/targets.md): Node.js and npm,
# redis-server, redis-tools, libfaketime and python3-psycopg (for the example
# services, examples/services/) from the distribution when missing, then the
# npm packages of targets/ at the versions targets/package-lock.json pins.
# Exit codes as scripts/test.sh: 2 without root or sudo for a missing package
# (the command is printed), 3 when apt or npm fails.
source "$(dirname "${BASH_SOURCE[0]}")/lib/setup.sh"

skewbench_install_packages --with-target-tools
skewbench_install_targets
