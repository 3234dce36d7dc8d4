#!/usr/bin/env bash
# Runs a program without the shim, with it loaded and nothing blocked, and with --block all; passes
# when its standard output and exit status are the same every time. Skips (77) without a GPU.
#   run_same.sh <wrapper> <command...>
set -u
wrapper=$1
shift
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIPPED: no NVIDIA GPU on this machine (nvidia-smi -L failed); this case runs on a GPU machine"
  exit 77
fi
if [[ $1 == python* ]] && ! "$1" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  echo "SKIPPED: $1 has no PyTorch with CUDA"
  exit 77
fi
native=$("$@" 2>/dev/null); native_status=$?
loaded=$("$wrapper" -- "$@" 2>/tmp/run_same_loaded.$$); loaded_status=$?
blocked=$("$wrapper" --block all -- "$@" 2>/tmp/run_same_blocked.$$); blocked_status=$?
printf 'native (exit %d):\n%s\nshim loaded (exit %d), its log:\n%s\n--block all (exit %d), its log:\n%s\n' \
  "$native_status" "$native" "$loaded_status" "$(cat /tmp/run_same_loaded.$$)" "$blocked_status" \
  "$(cat /tmp/run_same_blocked.$$)"
rm -f /tmp/run_same_loaded.$$ /tmp/run_same_blocked.$$
[ -n "$native" ] && [ "$native" == "$loaded" ] && [ "$native" == "$blocked" ] &&
  [ $native_status -eq $loaded_status ] && [ $native_status -eq $blocked_status ] && exit 0
echo "FAILED: outputs or exit statuses differ"
exit 1
# SPDX-License-Identifier: MIT
