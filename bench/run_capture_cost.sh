#!/usr/bin/env bash
# Prices call-site capture on the simulated stack (no GPU needed): ns per launch with
# CUDA_BLOCKRUN_CALLSITES=none against =all (every launch captured), for the C++ launch loop (native stack
# only) and for launches made from Python through ctypes, holding the GIL and releasing it (native stack and
# Python frames); then the Python line that --breadcrumbs keeps for every launch (no native stack), as
# `--breadcrumbs --callsites none` against `--breadcrumbs`. Alternates configurations run by run; prints medians
# and differences.
#   bench/run_capture_cost.sh <build-dir> [repetitions] [launches]
set -euo pipefail
build=$1
repetitions=${2:-7}
launches=${3:-200000}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
wrapper=$build/bin/cuda-blockrun
export LD_LIBRARY_PATH=$build/sim/lib
python=${PYTHON:-/usr/bin/python3}
run() {  # workload callsites
  case $1 in
    cpp) "$wrapper" --summary=0 --callsites "$2" -- "$build/bench/sim_launch_loop" "$launches" ;;
    gil | nogil)
      "$wrapper" --summary=0 --callsites "$2" -- "$python" "$here/python_capture_cost.py" \
        "$build/bench/libsim_launch_lib.so" "$((launches / 4))" "$1" ;;
    gil-line | nogil-line)  # all: the default callsites (auto), which keeps the line with breadcrumbs
      local callsites=auto
      [ "$2" = none ] && callsites=none
      "$wrapper" --summary=0 --breadcrumbs --callsites "$callsites" -- "$python" "$here/python_capture_cost.py" \
        "$build/bench/libsim_launch_lib.so" "$((launches / 4))" "${1%-line}" ;;
  esac
}
workloads=(${WORKLOADS:-cpp gil nogil gil-line nogil-line})  # WORKLOADS: a subset
declare -A samples
for ((r = 0; r < repetitions; ++r)); do
  for workload in "${workloads[@]}"; do
    for callsites in none all; do samples[$workload,$callsites]+="$(run $workload $callsites) "; done
  done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
printf '| workload | callsites none: ns per launch | callsites all (auto: --breadcrumbs rows) | capture cost per launch (ns) |\n|---|---|---|---|\n'
for workload in "${workloads[@]}"; do
  none=$(echo "${samples[$workload,none]}" | median)
  all=$(echo "${samples[$workload,all]}" | median)
  case $workload in
    cpp) label="C++ loop (native stack)" ;;
    gil) label="Python, GIL held (native stack + Python frames)" ;;
    nogil) label="Python, GIL released (native stack + Python frames)" ;;
    gil-line) label="Python, GIL held, --breadcrumbs: the Python line alone (callsites none vs auto)" ;;
    nogil-line) label="Python, GIL released, --breadcrumbs: the Python line alone (callsites none vs auto)" ;;
  esac
  printf '| %s | %.1f | %.1f | %.1f |\n' "$label" "$none" "$all" "$(awk -v a="$all" -v n="$none" 'BEGIN { print a - n }')"
done
echo "(medians of $repetitions runs; $launches launches per C++ run, $((launches / 4)) per Python run)"
# SPDX-License-Identifier: MIT
