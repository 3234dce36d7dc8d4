#!/usr/bin/env bash
# Runs one real-GPU case and checks the report. Skips (exit 77, registered as ctest's skip code) with
# a clear message where there is no GPU, or no PyTorch for the Python cases.
#   run_case.sh <wrapper> <expected-regex-file> <command...>
set -u
wrapper=$1
expected=$2
shift 2

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIPPED: no NVIDIA GPU on this machine (nvidia-smi -L failed); this case runs on a GPU machine"
  exit 77
fi
case $1 in
  python*)
    if ! "$1" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
      echo "SKIPPED: $1 has no PyTorch with CUDA"
      exit 77
    fi ;;
esac
# nvcc-built programs need the CUDA runtime library of the toolkit.
if ! ldconfig -p 2>/dev/null | grep -q 'libcudart.so.13'; then
  export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi

output=$("$wrapper" --block all -- "$@" 2>&1)
status=$?
printf '%s\n(exit status %d)\n' "$output" "$status"
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
