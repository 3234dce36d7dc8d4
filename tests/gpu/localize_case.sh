#!/usr/bin/env bash
# GPU case: `cuda-blockrun --localize` on a program with a known fault; the verdict must name the kernel, its
# launch number, and the call site at a marker comment in the source (never a hard-coded line number).
#   localize_case.sh <wrapper> <kernel-and-launch> <native|python> <source-with-marker> <marker> <command...>
# kernel-and-launch: the start of the verdict's culprit, e.g.
#   "kernel scatter(float*, int const*, int)<<<(4096,1,1), (256,1,1), 0, 0x0>>>, launch #6 (scatter#1)".
# Skips (77) without a GPU, or without PyTorch for Python cases.
set -u
wrapper=$1
culprit=$2
kind=$3
source=$4
marker=$5
shift 5
. "$(dirname "$0")/require_gpu.sh" "$([ "$kind" = python ] && echo python)"
line=$(grep -n -- "$marker" "$source" | head -1 | cut -d: -f1)
output=$("$wrapper" --localize -- "$@" 2>&1)
echo "$output"
verdict=$(echo "$output" | grep -A5 '^\[cuda-blockrun\] localize: culprit: ')
[ -n "$verdict" ] || { echo "FAILED: no verdict"; exit 1; }
echo "$verdict" | grep -qF "localize: culprit: $culprit" || { echo "FAILED: the culprit is not '$culprit'"; exit 1; }
where="$(basename "$source"):$line"
if [ "$kind" = native ]; then
  echo "$verdict" | grep -q "launched at .*$where" || { echo "FAILED: the call site is not $where"; exit 1; }
else
  echo "$verdict" | grep -q "python: .*$where" || { echo "FAILED: the Python line is not $where"; exit 1; }
fi
echo "OK: --localize names $culprit at $where"
# SPDX-License-Identifier: MIT
