#!/usr/bin/env bash
# GPU case (issue 40, N2): a PyTorch process that ends with os._exit after CUDA work (as multiprocessing's and
# DataLoader's workers end) still writes its end: the report has its summary, `cuda-blockrun report` says it ran
# clean (exit 0), and the trace is one JSON document. Skips (77) without a GPU or PyTorch with CUDA.
#   process_end_case.sh <wrapper>
set -u
wrapper=$1
. "$(dirname "$0")/require_gpu.sh" python
work=$(mktemp -d /tmp/blockrun_process_end.XXXXXX)
trap 'rm -rf "$work"' EXIT
status=0
fail() { echo "FAILED: $*"; status=1; }
"$wrapper" --report "$work/r.jsonl" --trace "$work/t.json" -- python3 -c '
import os, torch
x = torch.ones(1024, device="cuda") * 2
torch.cuda.synchronize()
print("sum", x.sum().item(), flush=True)
os._exit(0)' 2>&1
echo "(exit status $?)"
python3 - "$work/r.jsonl" "$work/t.json" <<'PYTHON' || status=1
import json, sys
types = [json.loads(line)["type"] for line in open(sys.argv[1]) if line.strip()]
print("report records:", sorted(set(types)))
if "summary" not in types:
    sys.exit("FAILED: the report has no summary: the process's end was not written")
trace = json.load(open(sys.argv[2]))
print("trace events:", len(trace["traceEvents"]))
PYTHON
"$wrapper" report "$work/r.jsonl"
verdict=$?
echo "(report: exit status $verdict)"
[ $verdict -eq 0 ] || fail "report exits $verdict for a process that ended clean with os._exit(0)"
[ $status -eq 0 ] && echo "OK: os._exit wrote the process's end"
exit $status
# SPDX-License-Identifier: MIT
