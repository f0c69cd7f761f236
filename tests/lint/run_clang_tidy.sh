#!/usr/bin/env bash
# clang-tidy, with the checks .clang-tidy lists, finds nothing in the project's
# own sources (harness/ and bench/), compiled as the build compiles them.
#
#   run_clang_tidy.sh SOURCE_DIR BUILD_DIR
#
# BUILD_DIR must hold compile_commands.json (the top CMakeLists.txt asks CMake
# for it). First it proves the check can fail: a file with a use after move
# must be reported. Exit codes: 0 clean, 1 findings, 77 clang-tidy is not
# installed (CTest reports the test as skipped).
set -euo pipefail

source_dir=${1:?usage: run_clang_tidy.sh SOURCE_DIR BUILD_DIR}
build_dir=${2:?usage: run_clang_tidy.sh SOURCE_DIR BUILD_DIR}
tidy=${CLANG_TIDY:-clang-tidy}
if ! command -v "$tidy" >/dev/null; then
  echo "SKIPPED: $tidy is not installed (apt-get install clang-tidy)"
  exit 77
fi
if [[ ! -f "$build_dir/compile_commands.json" ]]; then
  echo "FAIL: $build_dir/compile_commands.json is missing"
  exit 1
fi
cd "$source_dir"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cp .clang-tidy "$scratch/"
cat >"$scratch/planted.cpp" <<'CPP'
#include <string>
#include <utility>
std::size_t planted() {
  std::string s = "moved";
  std::string t = std::move(s);
  return s.size() + t.size();
}
CPP
# Each rule this lint relies on must report a planted case, or it cannot fail.
# The output is kept before it is searched: `grep -q` closing the pipe early
# would make clang-tidy fail with SIGPIPE under pipefail.
expect_reported() {
  local file=$1 check=$2 what=$3 found
  found=$("$tidy" --quiet "$file" -- -std=c++20 2>/dev/null || true)
  if grep -q "$check" <<<"$found"; then
    echo "ok: a planted $what is reported"
  else
    echo "FAIL: $tidy did not report a planted $what; the check cannot fail"
    exit 1
  fi
}
expect_reported "$scratch/planted.cpp" bugprone-use-after-move "use after move"
# A function one line over readability-function-size's limit in .clang-tidy.
{
  echo 'int planted_long() {'
  echo '  int n = 0;'
  for i in $(seq 1 60); do echo "  n += $i;"; done
  echo '  return n;'
  echo '}'
} >"$scratch/planted_long.cpp"
expect_reported "$scratch/planted_long.cpp" readability-function-size "function over 60 lines"

mapfile -t files < <(find harness -name '*.cpp' | sort)
# bench/ is checked when it is built (SKEWBENCH_BUILD_BENCH): clang-tidy needs
# each file's compile command.
while IFS= read -r file; do
  if grep -qF "\"$PWD/$file\"" "$build_dir/compile_commands.json"; then files+=("$file"); fi
done < <(find bench -name '*.cpp' | sort)
jobs=$(nproc)
log="$scratch/tidy.log"
printf '%s\n' "${files[@]}" | xargs -P "$jobs" -n 4 "$tidy" -p "$build_dir" --quiet >"$log" 2>/dev/null || true
if grep -q 'warning:\|error:' "$log"; then
  grep -A3 'warning:\|error:' "$log"
  echo "FAIL: $tidy found the problems above (checks: .clang-tidy)"
  exit 1
fi
echo "ok: $tidy found nothing in ${#files[@]} files"
