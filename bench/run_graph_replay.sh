#!/usr/bin/env bash
# The cost of graph breadcrumbs in a replay: tests/gpu/graph_fault.cu's `bench` mode (a captured graph of 21
# small kernels, replayed 2000 times a round, median of 7 rounds: BENCH graph_replay_us) with no shim, the
# shim with nothing blocked, --breadcrumbs (a breadcrumb after each replay), and --breadcrumbs
# --graph-breadcrumbs (also a breadcrumb node after each captured kernel, and the slots' reset before each
# replay). Configurations alternate run by run;
# prints the median over runs of each and its ratio to no shim.
#   bench/run_graph_replay.sh <build-dir> [repetitions]
set -uo pipefail
build=$1
repetitions=${2:-5}
program=$build/gpu/graph_fault
wrapper=$build/bin/cuda-blockrun
names=("native" "shim, nothing blocked" "shim, --breadcrumbs" "shim, --breadcrumbs --graph-breadcrumbs")
run() {
  case $1 in
    0) "$program" bench 2000 ;;
    1) "$wrapper" -- "$program" bench 2000 ;;
    2) "$wrapper" --breadcrumbs -- "$program" bench 2000 ;;
    3) "$wrapper" --breadcrumbs --graph-breadcrumbs -- "$program" bench 2000 ;;
  esac 2>&1 | sed -n 's/^BENCH graph_replay_us //p'
}
declare -A samples
for ((r = 0; r < repetitions; ++r)); do
  for c in 0 1 2 3; do samples[$c]+="$(run $c) "; done
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
base=$(echo "${samples[0]}" | median)
echo "| configuration | us per replay (median of $repetitions) | ratio | runs |"
echo "|---|---|---|---|"
for c in 0 1 2 3; do
  m=$(echo "${samples[$c]}" | median)
  printf '| %s | %.2f | %.3f | %s|\n' "${names[$c]}" "$m" "$(awk -v a="$m" -v b="$base" 'BEGIN { print a / b }')" "${samples[$c]}"
done
# SPDX-License-Identifier: MIT
