#!/usr/bin/env bash
# Times the empty-kernel launch loop under each configuration, alternating configurations run by run
# so that drift hits all alike, and prints the median microseconds per launch and the ratio to native.
#   bench/run_launch_loop.sh <build-dir> [repetitions] [launches] [program]
# program: launch_loop (shared runtime, default) or launch_loop_static (nvcc's default static runtime)
# (The full harness of every workload is issue 6; this is the launch-cost slice quoted in the README.)
set -euo pipefail
build=$1
repetitions=${2:-7}
launches=${3:-200000}
program=$build/bench/${4:-launch_loop}
wrapper=$build/bin/cuda-blockrun
if ! ldconfig -p 2>/dev/null | grep -q 'libcudart.so.13'; then
  export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
names=("native" "CUDA_LAUNCH_BLOCKING=1" "shim loaded, disabled (CUDA_BLOCKRUN=0)" "shim, nothing blocked"
       "shim, --block empty_kernel" "shim, --block all")
run() {
  case $1 in
    0) "$program" "$launches" ;;
    1) CUDA_LAUNCH_BLOCKING=1 "$program" "$launches" ;;
    2) CUDA_BLOCKRUN=0 "$wrapper" -- "$program" "$launches" 2>/dev/null ;;
    3) "$wrapper" -- "$program" "$launches" 2>/dev/null ;;
    4) "$wrapper" --block empty_kernel -- "$program" "$launches" 2>/dev/null ;;
    5) "$wrapper" --block all -- "$program" "$launches" 2>/dev/null ;;
  esac
}
declare -A samples
for ((r = 0; r < repetitions; ++r)); do
  for c in 0 1 2 3 4 5; do samples[$c]+="$(run $c) "; done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
native=$(echo "${samples[0]}" | median)
printf '\n%s:\n\n| configuration | us per launch (median of %d runs of %d launches) | ratio to native |\n|---|---|---|\n' \
  "$(basename "$program")" "$repetitions" "$launches"
for c in 0 1 2 3 4 5; do
  m=$(echo "${samples[$c]}" | median)
  printf '| %s | %.3f | %.3f |\n' "${names[$c]}" "$m" "$(awk -v m="$m" -v n="$native" 'BEGIN { print m / n }')"
done
