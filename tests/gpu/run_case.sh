#!/usr/bin/env bash
# Runs one real-GPU case and checks the report. Skips (exit 77, registered as ctest's skip code) with
# a clear message where there is no GPU, or no PyTorch for the Python cases.
#   run_case.sh <wrapper> <expected-regex-file> <command...>
set -u
wrapper=$1
expected=$2
shift 2

. "$(dirname "$0")/require_gpu.sh"
# Python cases need PyTorch with CUDA, or the modules named in GPU_CASE_NEEDS (space-separated; set by
# tests/gpu/CMakeLists.txt, e.g. "torch triton" or "cupy"). Not a CUDA_BLOCKRUN_* name: the shim
# rejects unknown variables of its own prefix.
case $1 in
  python*)
    for module in ${GPU_CASE_NEEDS:-torch}; do
      case $module in
        torch) check='import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' ;;
        cupy) check='import cupy, sys; sys.exit(0 if cupy.cuda.runtime.getDeviceCount() > 0 else 1)' ;;
        *) check="import $module" ;;
      esac
      if ! "$1" -c "$check" >/dev/null 2>&1; then
        echo "SKIPPED: $1 has no $module (with CUDA)"
        exit 77
      fi
    done ;;
esac
# GPU_CASE_BLOCK: the policy of this case (default: block every launch).
output=$("$wrapper" --block "${GPU_CASE_BLOCK:-all}" -- "$@" 2>&1)
status=$?
printf '%s\n(exit status %d)\n' "$output" "$status"
# A case that finds a prerequisite missing itself says SKIPPED and exits 77.
if [ "$status" -eq 77 ] && printf '%s\n' "$output" | grep -q '^SKIPPED'; then
  exit 77
fi
failed=0
while IFS= read -r pattern; do
  [ -z "$pattern" ] && continue
  case $pattern in '#'*) continue ;; esac
  if ! printf '%s\n' "$output" | grep -Eq -- "$pattern"; then
    echo "MISSING: $pattern"
    failed=1
  fi
done < "$expected"
exit $failed
# SPDX-License-Identifier: MIT
