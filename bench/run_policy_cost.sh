#!/usr/bin/env bash
# Prices the policy and the trace on the simulated stack (no GPU needed): the launch loop without the shim,
# with the shim and no policy, with `all` (every launch also synchronized, as the simulated driver does it),
# with a 10-rule policy that blocks nothing the loop launches (so only the deciding is measured), and with
# --trace (each launch recorded for the timeline; the file written at exit is outside the timed loop).
# Alternates configurations run by run; prints medians in ns per launch and the difference to "no policy".
#   bench/run_policy_cost.sh <build-dir> [repetitions] [launches]
set -euo pipefail
build=$1
repetitions=${2:-7}
launches=${3:-200000}
program=$build/bench/sim_launch_loop
wrapper=$build/bin/cuda-blockrun
export LD_LIBRARY_PATH=$build/sim/lib
ten_rules='!ncclKernel*; regex=^xgemm; family=graph; library=cublasLt*; #100000000-100000010; every=1000000007; thread=99; stream=0x1234; after=1h; sm90_*#5'
names=("no shim" "shim, no policy" "shim, all" "shim, 10 rules (none matching)" "shim, no policy, --trace")
trace=$(mktemp -d)
trap 'rm -rf "$trace"' EXIT
run() {
  case $1 in
    0) "$program" "$launches" ;;
    1) "$wrapper" --summary=0 -- "$program" "$launches" ;;
    2) "$wrapper" --summary=0 --block all -- "$program" "$launches" ;;
    3) "$wrapper" --summary=0 --block "$ten_rules" -- "$program" "$launches" ;;
    4) "$wrapper" --summary=0 --trace "$trace/trace.json" -- "$program" "$launches" 2>/dev/null ;;
  esac
}
declare -A samples
for ((r = 0; r < repetitions; ++r)); do
  for c in 0 1 2 3 4; do samples[$c]+="$(run $c) "; done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
base=$(echo "${samples[1]}" | median)
printf '| configuration | ns per launch (median of %d runs of %d launches) | added to "shim, no policy" |\n|---|---|---|\n' \
  "$repetitions" "$launches"
for c in 0 1 2 3 4; do
  m=$(echo "${samples[$c]}" | median)
  printf '| %s | %.1f | %s |\n' "${names[$c]}" "$m" "$(awk -v m="$m" -v b="$base" 'BEGIN { printf "%+.1f", m - b }')"
done
# SPDX-License-Identifier: MIT
