#!/usr/bin/env bash
# GPU case: runs a program under the wrapper with a report, and checks the first error's call site against a
# marker comment in the source (never a hard-coded line number).
#   report_case.sh <wrapper> <native|python> <source-with-marker> <marker> <command...>
# native: first_error.launch.callsite is <source>:<marker line>; python: first_error.launch.python[0] is.
# GPU_CASE_BLOCK: the policy (default: all). Skips (77) without a GPU, or without PyTorch for Python cases.
set -u
wrapper=$1
kind=$2
source=$3
marker=$4
shift 4
. "$(dirname "$0")/require_gpu.sh" "$([ "$kind" = python ] && echo python)"
line=$(grep -n -- "$marker" "$source" | head -1 | cut -d: -f1)
report=$(mktemp /tmp/blockrun_report.XXXXXX)
"$wrapper" --block "${GPU_CASE_BLOCK:-all}" --report "$report" -- "$@" 2>&1
echo "(exit status $?)"
python3 - "$report" "$kind" "$source" "$line" <<'PYTHON'
import json, os, sys
report, kind, source, line = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
records = [json.loads(text) for text in open(report) if text.strip()]
first = next((r for r in records if r["type"] == "first_error"), None)
if not first or not first.get("launch"):
    sys.exit("FAILED: no first_error record with a launch")
launch = first["launch"]
print("report: error", first["error"], "certainty", first["certainty"], "kernel", (launch["kernel"] or "")[:120])
print("report: callsite", json.dumps(launch["callsite"]))
print("report: python", json.dumps(launch["python"]), "(" + launch["python_status"] + ")")
if kind == "native":
    site = launch["callsite"] or {}
    where = (site.get("file") or "", site.get("line"))
else:
    frames = launch["python"] or [{}]
    where = (frames[0].get("file") or "", frames[0].get("line"))
if os.path.basename(where[0]) != os.path.basename(source) or where[1] != line:
    sys.exit(f"FAILED: expected {os.path.basename(source)}:{line}, report says {where[0]}:{where[1]}")
print(f"OK: the report names {os.path.basename(source)}:{line}")
PYTHON
status=$?
rm -f "$report"
exit $status
# SPDX-License-Identifier: MIT
