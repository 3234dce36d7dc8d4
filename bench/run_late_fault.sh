#!/usr/bin/env bash
# The late-fault training loop (tests/gpu/torch_late_fault.py) under: no shim, CUDA_LAUNCH_BLOCKING=1,
# the shim blocking only the failing kernel's name, and the shim with nothing blocked. Alternates the
# configurations run by run; prints, per configuration, where the fault surfaced and the median (over
# runs) of each run's median step time before the fault.
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
names=("native" "CUDA_LAUNCH_BLOCKING=1" "shim, --block '$glob'" "shim, nothing blocked")
run() {
  case $1 in
    0) python3 "$script" ;;
    1) CUDA_LAUNCH_BLOCKING=1 python3 "$script" ;;
    2) "$wrapper" --block "$glob" -- python3 "$script" ;;
    3) "$wrapper" -- python3 "$script" ;;
  esac 2>&1
}
declare -A times where
for ((r = 0; r < repetitions; ++r)); do
  for c in 0 1 2 3; do
    output=$(run $c)
    [ $r -eq 0 ] && printf '== %s\n%s\n' "${names[$c]}" "$(printf '%s\n' "$output" | grep -E 'fault surfaced|cuda-blockrun\]' | cut -c1-300)"
    times[$c]+="$(printf '%s\n' "$output" | sed -n 's/^median step time before the fault: \([0-9.]*\) ms.*/\1/p') "
    where[$c]=$(printf '%s\n' "$output" | sed -n 's/^fault surfaced in step \([0-9]*\) at line [0-9]* (\(.*\)).*/step \1, \2/p')
  done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
native=$(echo "${times[0]}" | median)
printf '\n| configuration | fault surfaced | step time before the fault, ms (median of %d runs) | ratio to native |\n|---|---|---|---|\n' "$repetitions"
for c in 0 1 2 3; do
  m=$(echo "${times[$c]}" | median)
  printf '| %s | %s | %.3f | %.3f |\n' "${names[$c]}" "${where[$c]}" "$m" "$(awk -v m="$m" -v n="$native" 'BEGIN { print m / n }')"
done
