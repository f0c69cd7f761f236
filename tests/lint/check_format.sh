#!/usr/bin/env bash
# Every C++ file of the project is formatted as .clang-format says.
#
#   check_format.sh SOURCE_DIR
#
# First it proves the check can fail: a copy of a project file with a planted
# misformat must be reported. Exit codes: 0 formatted, 1 a file is not,
# 77 clang-format is not installed (CTest reports the test as skipped).
set -euo pipefail

source_dir=${1:?usage: check_format.sh SOURCE_DIR}
format=${CLANG_FORMAT:-clang-format}
if ! command -v "$format" >/dev/null; then
  echo "SKIPPED: $format is not installed (apt-get install clang-format)"
  exit 77
fi
cd "$source_dir"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cp .clang-format "$scratch/"
printf 'int   main( ) {return 0;}\n' >"$scratch/planted.cpp"
if "$format" --dry-run --Werror "$scratch/planted.cpp" >/dev/null 2>&1; then
  echo "FAIL: $format accepted a misformatted file; the check cannot fail"
  exit 1
fi

mapfile -t files < <(git ls-files '*.cpp' '*.hpp' 2>/dev/null || find harness tests bench -name '*.[ch]pp')
if ! "$format" --dry-run --Werror "${files[@]}"; then
  echo "FAIL: the files above differ from .clang-format; run: clang-format -i FILE"
  exit 1
fi
echo "ok: ${#files[@]} files formatted as .clang-format says"
