#!/usr/bin/env bash
# GPU case: a program that prints `FAULT stream=<handle> poke_launch=<N|?>` and then faults in kernel `poke` on
# that stream runs under `cuda-blockrun --breadcrumbs --report`, nothing blocked. The report's first_error must
# come from the breadcrumbs and name that launch exactly (kernel poke on that stream, launch N where known), or
# list it among the candidates with a pin rule that blocks it; the program's own result must be the fault.
#   breadcrumbs_case.sh <wrapper> <program> [args...]
set -u
wrapper=$1
shift
. "$(dirname "$0")/require_gpu.sh"
directory=$(mktemp -d)
trap 'rm -rf "$directory"' EXIT
output=$("$wrapper" --breadcrumbs --report "$directory/report.jsonl" -- "$@" 2>&1)
status=$?
echo "$output"
[ "$status" -ne 0 ] || { echo "FAILED: the program did not see its fault (exit status 0)"; exit 1; }
fault=$(echo "$output" | sed -n 's/^FAULT //p' | head -1)
[ -n "$fault" ] || { echo "FAILED: the program printed no FAULT line"; exit 1; }
python3 - "$directory/report.jsonl" $fault <<'PY'
import json, sys
path, stream_field, launch_field = sys.argv[1:4]
stream = stream_field.split("=", 1)[1]
launch = launch_field.split("=", 1)[1]
errors = [record for record in map(json.loads, open(path)) if record.get("type") == "first_error"]
if not errors:
    sys.exit("FAILED: no first_error in the report")
first = errors[0]
if first.get("method") != "breadcrumbs":
    sys.exit(f"FAILED: found by {first.get('method')}, not breadcrumbs: {first}")

# The kernels are in an anonymous namespace: "(anonymous namespace)::poke".
def is_culprit(record):
    return ((record.get("kernel_base") or "").split("::")[-1] == "poke" and record.get("stream") == stream
            and (launch == "?" or str(record.get("kernel_launch")) == launch))

if first.get("certainty") == "exact":
    if not is_culprit(first["launch"]):
        sys.exit(f"FAILED: exact, but not poke (launch {launch}) on stream {stream}: {first['launch']}")
    print(f"OK: exact: poke#{first['launch']['kernel_launch']}, stream {stream}")
else:
    suspects = first.get("suspects") or []
    if not any(is_culprit(s) for s in suspects):
        sys.exit(f"FAILED: poke (launch {launch}) on stream {stream} is not among the candidates: {suspects}")
    rule = first.get("pin_rule") or ""
    culprit = next(s for s in suspects if is_culprit(s))
    # NAME#N where one thread launches the kernel; NAME thread#N (its number among its thread's launches, which
    # another interleaving keeps) where several do.
    terms = {f"{culprit['kernel_base']}#{culprit['kernel_launch']}",
             f"{culprit['kernel_base']} thread#{culprit.get('thread_launch')}"}
    if not terms & set(rule.split(",")):
        sys.exit(f"FAILED: the pin rule {rule!r} does not block poke#{culprit['kernel_launch']} "
                 f"(thread#{culprit.get('thread_launch')})")
    print(f"OK: {len(suspects)} candidates, poke#{culprit['kernel_launch']} on stream {stream} among "
          f"them; pin rule {rule}")
PY
# SPDX-License-Identifier: MIT
