#!/usr/bin/env bash
# The late-fault training loop (tests/gpu/torch_late_fault.py) under: no shim, CUDA_LAUNCH_BLOCKING=1,
# the shim blocking only the failing kernel's name, the shim with nothing blocked, the shim with
# breadcrumbs, and `cuda-blockrun --localize` (all its runs). Alternates the configurations run by run;
# prints, per configuration, where the fault surfaced (or --localize's verdict), the median (over runs)
# of each run's median step time before the fault, and the median wall time of the whole command: the
# breadcrumbs issue's target is --localize, naming kernel, call site and Python line, in less wall time
# than one run under CUDA_LAUNCH_BLOCKING=1.
#   bench/run_late_fault.sh <build-dir> [repetitions] [kernel-glob]
# Without a glob, it is learned from one run under --block all (bench/late_fault_glob.sh).
set -uo pipefail
build=$1
repetitions=${2:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
script=$root/tests/gpu/torch_late_fault.py
wrapper=$build/bin/cuda-blockrun
glob=${3:-$("$root/bench/late_fault_glob.sh" "$wrapper" "$script")}
echo "blocking only: $glob"
names=("native" "CUDA_LAUNCH_BLOCKING=1" "shim, --block '$glob'" "shim, nothing blocked" "shim, --breadcrumbs"
       "--localize (every run it made)")
configs=(0 1 2 3 4 5)
run() {
  case $1 in
    0) python3 "$script" ;;
    1) CUDA_LAUNCH_BLOCKING=1 python3 "$script" ;;
    2) "$wrapper" --block "$glob" -- python3 "$script" ;;
    3) "$wrapper" --breadcrumbs=0 -- python3 "$script" ;;
    4) "$wrapper" --breadcrumbs -- python3 "$script" ;;
    5) "$wrapper" --localize -- python3 "$script" ;;
  esac 2>&1
}
declare -A times where walls
for ((r = 0; r < repetitions; ++r)); do
  for c in "${configs[@]}"; do
    start=$(date +%s.%N)
    output=$(run $c)
    walls[$c]+="$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.3f", e - s }') "
    [ $r -eq 0 ] && printf '== %s\n%s\n' "${names[$c]}" "$(printf '%s\n' "$output" | grep -E 'fault surfaced|cuda-blockrun\]' | cut -c1-300)"
    # --localize: the first run's step time (its later runs, if any, are in the wall time).
    times[$c]+="$(printf '%s\n' "$output" | sed -n 's/^median step time before the fault: \([0-9.]*\) ms.*/\1/p' | head -1) "
    where[$c]=$(printf '%s\n' "$output" | sed -n 's/^fault surfaced in step \([0-9]*\) at line [0-9]* (\(.*\)).*/step \1, \2/p' | head -1)
    if [ "$c" = 5 ]; then
      runs=$(printf '%s\n' "$output" | grep -c '^\[cuda-blockrun\] summary:')
      where[$c]="$runs run(s): $(printf '%s\n' "$output" | sed -n 's/^\[cuda-blockrun\] localize: culprit: //p' | cut -c1-120)"
    fi
  done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
native=$(echo "${times[0]}" | median)
clb_wall=$(echo "${walls[1]}" | median)
printf '\n| configuration | fault surfaced | step time before the fault, ms (median of %d runs) | ratio to native | wall time of the command, s (median) | wall ratio to CUDA_LAUNCH_BLOCKING=1 |\n|---|---|---|---|---|---|\n' "$repetitions"
for c in "${configs[@]}"; do
  m=$(echo "${times[$c]}" | median)
  w=$(echo "${walls[$c]}" | median)
  printf '| %s | %s | %.3f | %.3f | %.2f | %.3f |\n' "${names[$c]}" "${where[$c]}" "$m" \
    "$(awk -v m="$m" -v n="$native" 'BEGIN { print m / n }')" "$w" "$(awk -v w="$w" -v c="$clb_wall" 'BEGIN { print w / c }')"
done
# SPDX-License-Identifier: MIT
