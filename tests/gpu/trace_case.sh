#!/usr/bin/env bash
# GPU case (issue 20): --trace on real programs, each trace checked by tests/trace/check_trace.py (JSON, slices
# nested per thread, arrows bound to slices, at most one exact culprit):
#   1. the demo under --block all --gpu-time: the culprit's arrow from stencil#13's slice, exact, GPU spans;
#   2. a PyTorch training loop (torch_embedding_train.py: the embedding's lookup faults at step 30) with only
#      the lookup's kernel blocked and --gpu-time: its arrow from the lookup's slice, GPU spans;
#   3. the same loop under --breadcrumbs: its arrow from the lookup's slice, exact;
#   4. the same loop with --log-launches --report, turned into a trace by `cuda-blockrun report --trace`: the
#      same arrow.
# GPU_TRACE_KEEP=DIR keeps the traces there (docs/trace.md's picture is made from the second).
#   trace_case.sh <wrapper> <checker> <demo> <torch_embedding_train.py>
set -u
wrapper=$1
checker=$2
demo=$3
script=$4
. "$(dirname "$0")/require_gpu.sh" python
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
lookup='regex=vectorized_gather_kernel|indexSelect|index_elementwise_kernel'
# NAME#N as the log writes it: the kernel's base name, namespaces and template arguments kept
# (at::native::vectorized_gather_kernel<16, long>#30 under PyTorch 2.11).
lookup_launch='(^|::)(vectorized_gather_kernel|indexSelect[A-Za-z]*|index_elementwise_kernel)(<[^#]*>)?#[0-9]+$'
failed=0

check() {  # check NAME TRACE CHECKER-OPTIONS...
  local name=$1 trace=$2
  shift 2
  if python3 "$checker" "$trace" "$@"; then
    echo "ok: $name"
  else
    echo "FAILED: $name"
    failed=1
  fi
  if [ -n "${GPU_TRACE_KEEP:-}" ]; then mkdir -p "$GPU_TRACE_KEEP" && cp "$trace" "$GPU_TRACE_KEEP/$name.json"; fi
}

run() {  # run NAME COMMAND...: its log kept beside the trace, its tail shown
  local name=$1
  shift
  "$@" >"$work/$name.log" 2>&1
  echo "\$ $* (exit $?)"
  grep -E '^\[cuda-blockrun\] (first error|  in |  found by|trace:)' "$work/$name.log" | head -8
}

run demo "$wrapper" --block all --gpu-time --trace "$work/demo.json" -- "$demo"
check demo "$work/demo.json" --culprit 'stencil#13' --exact --gpu-spans

run torch-blocked "$wrapper" --block "$lookup" --gpu-time --trace "$work/torch-blocked.json" -- python3 "$script"
check torch-blocked "$work/torch-blocked.json" --culprit-regex "$lookup_launch" --gpu-spans --min-launches 500

run torch-breadcrumbs "$wrapper" --breadcrumbs --trace "$work/torch-breadcrumbs.json" -- python3 "$script"
check torch-breadcrumbs "$work/torch-breadcrumbs.json" --culprit-regex "$lookup_launch" --exact --min-launches 500

run torch-report "$wrapper" --breadcrumbs --log-launches --log "$work/torch-report.log.txt" \
  --report "$work/torch.jsonl" -- python3 "$script"
"$wrapper" report --trace "$work/torch-report.json" "$work/torch.jsonl" >/dev/null
check torch-report "$work/torch-report.json" --culprit-regex "$lookup_launch" --exact --min-launches 500 --processes 1

[ "$failed" = 0 ] || exit 1
echo "ok: every trace checked"
# SPDX-License-Identifier: MIT
