#!/usr/bin/env bash
# Every JSON skewbench reads goes through the bounded parser of
# harness/common/json_reader (parse_json_text, parse_bounded_json): its depth
# and size limits are what keep a hostile answer, /health or input file from
# crashing the process. A direct nlohmann::json::parse anywhere else in
# harness/ skips them, and fails this check.
#
#   check_json_parse.sh SOURCE_DIR
#
# First it proves the check can fail on a planted direct parse. Exit codes:
# 0 none found, 1 found (each named with its line).
set -euo pipefail

source_dir=${1:?usage: check_json_parse.sh SOURCE_DIR}
cd "$source_dir"

# json::parse( or json::parse ( after any qualifier (nlohmann::json, a
# using-alias named json, ordered_json); json_reader.cpp is the one place.
pattern='json[[:space:]]*::[[:space:]]*parse[[:space:]]*\('
direct_parses() { grep -rnE "$pattern" "$@" | grep -v '^harness/common/json_reader\.cpp:' || true; }

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
printf 'auto x = nlohmann::json::parse(body);\n' >"$scratch/planted.cpp"
if [[ -z "$(direct_parses "$scratch")" ]]; then
  echo "FAIL: a planted nlohmann::json::parse was not found; the check cannot fail"
  exit 1
fi

found=$(direct_parses harness --include='*.cpp' --include='*.hpp')
if [[ -n "$found" ]]; then
  echo "$found"
  echo "FAIL: the lines above parse JSON without the bounds of harness/common/json_reader;"
  echo "      use parse_bounded_json (untrusted bytes) or parse_json_text (input files)"
  exit 1
fi
echo "ok: every JSON in harness/ is parsed by harness/common/json_reader"
