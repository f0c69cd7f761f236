# Shared by the target tests (tests/targets/check_*.sh): hold a run of
# `skewbench targets` to the findings table, show that the check can fail,
# and expect a run's exit code and words. Each script sets $skewbench and
# $scratch, and runs from the source folder.

# targets_as_table OUT [ARGS...]: skewbench targets ARGS --out OUT -q
# --expect docs/targets.md must exit 0 (its output is shown when it does
# not); then every target's evidence folder under OUT verifies.
targets_as_table() {
  local out=$1
  shift
  local code=0
  "$skewbench" targets "$@" --out "$out" -q --expect docs/targets.md >"$out.txt" 2>&1 || code=$?
  if [[ $code -ne 0 ]]; then
    cat "$out.txt"
    echo "FAIL: skewbench targets $* --expect docs/targets.md exited $code"
    exit 1
  fi
  local folder
  for folder in "$out"/*/; do
    "$skewbench" verify "$folder" >/dev/null || { echo "FAIL: $folder does not verify"; exit 1; }
  done
}

# planted_difference TARGET SCENARIO CELLS PLANTED VERDICT [ARGS...]: in a
# copy of docs/targets.md, the row of TARGET × SCENARIO whose next cells are
# CELLS ("CONFLICT | 2 | 2") is given PLANTED instead ("SAFE | 2 | 1");
# skewbench targets TARGET ARGS --expect COPY must exit 1 and name the row,
# measured VERDICT where the copy says PLANTED's first cell.
planted_difference() {
  local target=$1 scenario=$2 cells=$3 planted=$4 verdict=$5
  shift 5
  local row="| $target | $scenario | $cells |"
  grep -qF "$row" docs/targets.md || { echo "FAIL: docs/targets.md has no row \"$row\""; exit 1; }
  local copy="$scratch/planted-$target.md"
  python3 -c 'import sys; text = open("docs/targets.md").read(); open(sys.argv[3], "w").write(text.replace(sys.argv[1], sys.argv[2], 1))' \
    "$row" "| $target | $scenario | $planted |" "$copy"
  local code=0
  "$skewbench" targets "$target" "$@" --out "$scratch/planted-$target" -q --expect "$copy" \
    >"$scratch/planted-$target.txt" 2>&1 || code=$?
  if [[ $code -ne 1 ]] || ! grep -qF "DIFFERS  $target × $scenario (line" "$scratch/planted-$target.txt" ||
    ! grep -qF "verdict is $verdict, the table says ${planted%% *}" "$scratch/planted-$target.txt"; then
    cat "$scratch/planted-$target.txt"
    echo "FAIL: a planted difference in $target × $scenario was not reported (exit $code)"
    exit 1
  fi
}

# run_expecting CODE OUT WHAT PATTERN... -- ARGS...: skewbench ARGS, its
# output in OUT, must exit CODE with each PATTERN (grep) in its output; else
# the output is shown and the test fails, saying WHAT exited otherwise.
run_expecting() {
  local want=$1 out=$2 what=$3
  shift 3
  local patterns=()
  while [[ $1 != -- ]]; do
    patterns+=("$1")
    shift
  done
  shift
  local code=0 pattern
  "$skewbench" "$@" >"$out" 2>&1 || code=$?
  for pattern in "${patterns[@]}"; do
    if [[ $code -ne $want ]] || ! grep -q -- "$pattern" "$out"; then
      cat "$out"
      echo "FAIL: $what exited $code, not $want with \"$pattern\" in its output"
      exit 1
    fi
  done
}

# changed_copy EXAMPLE NAME SED: a copy of the service folder EXAMPLE as
# target NAME under $scratch, its service.py changed by the sed expression
# SED (which must change it).
changed_copy() {
  local example=$1 name=$2
  mkdir -p "$scratch/$name"
  sed "$3" "$example/service.py" >"$scratch/$name/service.py"
  if cmp -s "$example/service.py" "$scratch/$name/service.py"; then
    echo "FAIL: the copy $name of the service is the service itself"
    exit 1
  fi
  python3 -c 'import json, sys; json.dump(dict(json.load(open(sys.argv[1])), name=sys.argv[3]), open(sys.argv[2], "w"))' \
    "$example/target.json" "$scratch/$name/target.json" "$name"
}
