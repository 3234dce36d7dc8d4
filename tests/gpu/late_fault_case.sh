#!/usr/bin/env bash
# GPU case: the user's workflow for a late fault. Run once with --block all to learn which kernel faults,
# then again blocking only kernels of that name: the fault must still be caught at its launch (the
# Python line in the model's forward), with every other launch asynchronous.
#   late_fault_case.sh <wrapper> <expected-file> <script>
set -u
wrapper=$1
expected=$2
script=$3
here=$(cd "$(dirname "$0")" && pwd)
. "$here/require_gpu.sh" python
glob=$("$here/../../bench/late_fault_glob.sh" "$wrapper" "$script")
if [ -z "$glob" ]; then
  echo "FAILED: --block all named no culprit"
  exit 1
fi
echo "the culprit's name, from a run with --block all: $glob"
GPU_CASE_BLOCK="$glob" exec "$here/run_case.sh" "$wrapper" "$expected" python3 "$script"
# SPDX-License-Identifier: MIT
