#!/usr/bin/env bash
# Runs the late-fault training loop once under `cuda-blockrun --block all` and prints a glob for the
# kernel the report names (`*name*`, from the last component of its demangled name): what a user would
# block in the next, fast run.
#   bench/late_fault_glob.sh <wrapper> <script>
set -u
culprit=$("$1" --block all -- python3 "$2" 2>&1 | sed -n 's/^\[cuda-blockrun\]   in kernel //p' | head -n 1)
[ -n "$culprit" ] || exit 0
# "void at::native::(anonymous namespace)::indexSelectSmallIndex<float, ...>(...)" -> indexSelectSmallIndex
name=$(printf '%s\n' "$culprit" | sed -e 's/^void //' -e 's/(anonymous namespace):://g' -e 's/[<(].*$//' -e 's/.*:://')
echo "*${name}*"
# SPDX-License-Identifier: MIT
