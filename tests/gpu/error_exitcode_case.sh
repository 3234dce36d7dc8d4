#!/usr/bin/env bash
# GPU case: --error-exitcode turns the exit status 0 of a program that swallowed its CUDA error into N, and
# leaves it 0 without the flag.
#   error_exitcode_case.sh <wrapper> <python script that catches its error and exits 0>
set -u
wrapper=$1
script=$2
. "$(dirname "$0")/require_gpu.sh" python
output=$("$wrapper" --error-exitcode 3 -- python3 "$script" 2>&1)
status=$?
echo "$output"
echo "(exit status $status)"
[ "$status" = 3 ] || { echo "FAILED: exit status $status with --error-exitcode 3, expected 3"; exit 1; }
echo "$output" | grep -Eq '^\[cuda-blockrun\] the program exited 0, but process [0-9]+ met cudaErrorAssert \(returned by [A-Za-z_]+\): exit status 3, as --error-exitcode says$' ||
  { echo "FAILED: no line saying why the exit status is 3"; exit 1; }
"$wrapper" -- python3 "$script" >/dev/null 2>&1
status=$?
[ "$status" = 0 ] || { echo "FAILED: exit status $status without --error-exitcode, expected the program's 0"; exit 1; }
echo "ok: 3 with --error-exitcode 3, the program's own 0 without it"
# SPDX-License-Identifier: MIT
