#!/usr/bin/env bash
# Includes only point down the layers of the harness.
#
#   check_layers.sh HARNESS_DIR "LAYER LAYER ..." [README]
#
# The layers come lowest first from the build (the order of the skewbench_layer
# calls in harness/skewbench/CMakeLists.txt, where alone it is written); a
# README given must draw the same order.
#
# The rules, for every #include "folder/file" under HARNESS_DIR:
#   common/          includes only common/
#   remote_effect/   includes common/ and remote_effect/
#   skewbench/LAYER  includes common/, its own layer and the layers before it in
#                    the order below; of remote_effect/ only the protocol
#                    (protocol.hpp, answers.hpp), the store in the in-process
#                    engine (infra/in_process.cpp) and, from runner on, the
#                    launcher; and evidence, published, artifacts, report and compare include no
#                    infra adapter (they take plain descriptions instead)
# The build enforces the order too (each layer's library sees only the headers
# of the layers it links); this check names the file, line and include.
#
# First it proves it can fail: a copy of the tree with an upward include and an
# adapter include planted must be rejected, naming both. Exit codes: 0 the
# tree keeps the rules, 1 it does not (or the planted includes went unnoticed).
set -euo pipefail

usage='usage: check_layers.sh HARNESS_DIR "LAYER LAYER ..." [README]'
harness=${1:?$usage}
read -r -a layers <<<"${2:?$usage}"
readme=${3:-}
adapters=(infra/pg_outbox.hpp infra/postgres_cluster.hpp infra/http_remote.hpp infra/http_failure.hpp
  infra/pqxx_compat.hpp)

declare -A rank
for i in "${!layers[@]}"; do rank[${layers[$i]}]=$i; done
declare -A adapter
for a in "${adapters[@]}"; do adapter[$a]=1; done

# Sets `reason` to why FILE (relative to the harness) may not include TARGET;
# empty when it may.
judge() {
  local file=$1 target=$2
  local folder=${target%%/*}
  reason=""
  case $file in
    common/*)
      [[ $folder == common ]] || reason="common/ includes nothing else of the harness"
      return
      ;;
    remote_effect/*)
      [[ $folder == common || $folder == remote_effect ]] || reason="remote_effect/ includes only common/ and itself"
      return
      ;;
  esac
  local layer=${file#skewbench/}
  layer=${layer%%/*}
  if [[ -z ${rank[$layer]:-} ]]; then
    reason="skewbench/$layer is not a layer (declare it with skewbench_layer in harness/skewbench/CMakeLists.txt)"
  elif [[ $layer =~ ^(evidence|published|artifacts|report|compare)$ && -n ${adapter[$target]:-} ]]; then
    reason="$layer uses no infra adapter: give it a plain description (infra/database_description.hpp)"
  elif [[ $folder == common ]]; then
    return
  elif [[ $folder == remote_effect ]]; then
    if [[ $target == remote_effect/protocol.hpp || $target == remote_effect/answers.hpp ]]; then
      return
    elif [[ $target == remote_effect/store.hpp ]]; then
      [[ $file == skewbench/infra/in_process.cpp ]] ||
        reason="only the in-process engine (infra/in_process.cpp) uses remote-effect's store"
    elif [[ $target != remote_effect/launcher.hpp ]]; then
      reason="the driver uses only the protocol and the launcher of remote-effect, never the service"
    elif ((rank[$layer] < rank[runner])); then
      reason="only runner and the layers above it start remote-effect"
    fi
  elif [[ -z ${rank[$folder]:-} ]]; then
    reason="\"$folder\" is not a folder of the harness"
  elif ((rank[$folder] > rank[$layer])); then
    reason="$layer may not include $folder, a layer above it (${layers[*]})"
  fi
}

# Prints one line per include that breaks the rules; returns 1 if any does.
check_tree() {
  local root=$1 status=0 hit file line target
  local pattern='^([^:]*):([0-9]+):[[:space:]]*#[[:space:]]*include[[:space:]]+"([^"]*)"'
  while IFS= read -r hit; do
    [[ $hit =~ $pattern ]] || continue
    file=${BASH_REMATCH[1]#"$root"/}
    line=${BASH_REMATCH[2]}
    target=${BASH_REMATCH[3]}
    judge "$file" "$target"
    if [[ -n $reason ]]; then
      echo "$file:$line: #include \"$target\": $reason"
      status=1
    fi
  done < <(grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]+"' --include='*.hpp' --include='*.cpp' \
    --include='*.in' "$root" | sort)
  return $status
}

# Negative self-check on a copy: an upward include and an adapter include.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cp -R "$harness/." "$scratch/"
echo '#include "sweep/cells.hpp"' >>"$scratch/skewbench/artifacts/verify.cpp"
echo '#include "infra/pg_outbox.hpp"' >>"$scratch/skewbench/evidence/evidence.cpp"
if planted=$(check_tree "$scratch"); then
  echo "FAIL: the check accepted a tree with planted includes that break the rules"
  exit 1
fi
for expected in 'skewbench/artifacts/verify.cpp:.*"sweep/cells.hpp": artifacts may not include sweep' \
  'skewbench/evidence/evidence.cpp:.*"infra/pg_outbox.hpp": evidence uses no infra adapter'; do
  if ! grep -q "$expected" <<<"$planted"; then
    echo "FAIL: the check did not name the planted include ($expected); it said:"
    echo "$planted"
    exit 1
  fi
done
echo "self-check: the planted includes were named"

if [[ -n $readme ]]; then
  drawn=$(printf ' → %s' "${layers[@]}")
  drawn=${drawn# → }
  if ! grep -qxF "$drawn" "$readme"; then
    echo "FAIL: $readme does not draw the layer order of the build as the line: $drawn"
    exit 1
  fi
fi

if ! check_tree "$harness"; then
  echo "FAIL: includes above break the layer order"
  exit 1
fi
echo "ok: every include in $harness points down the layers (${layers[*]})"
