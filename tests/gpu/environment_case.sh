#!/usr/bin/env bash
# GPU case (issue 42): what the shim says of the machine itself, on a real driver.
#   environment_case.sh <wrapper> <demo>
# 1. `--version` names the driver's CUDA version and a line per feature of src/cuda/driver_features.def; on a driver
#    that has them all (580: CUDA 13.0), each says "yes (ENTRY_POINT)", and the demo's report lists nothing missing
#    (`driver_missing` empty) and its log says nothing of the driver.
# 2. No device (CUDA_VISIBLE_DEVICES empty, as a container without GPU access): the report's first error means
#    "environment" and names no launch; --localize says so, names no kernel and runs the program once.
# Skips (77) without a GPU.
set -u
wrapper=$1
demo=$2
. "$(dirname "$0")/require_gpu.sh"
work=$(mktemp -d /tmp/blockrun_environment.XXXXXX)
trap 'rm -rf "$work"' EXIT
status=0
fail() { echo "FAILED: $*"; status=1; }

version=$("$wrapper" --version)
echo "$version"
echo "$version" | head -1 | grep -q "driver supports CUDA 1[0-9]\.[0-9]" || fail "--version names no driver version"
features=$(echo "$version" | tail -n +2)
[ "$(echo "$features" | grep -c .)" -eq 5 ] || fail "--version lists $(echo "$features" | grep -c .) features, not 5"
driver=$(echo "$version" | head -1 | sed -n 's/.*driver supports CUDA \([0-9]*\)\..*/\1/p')
if [ "${driver:-0}" -ge 13 ]; then
  echo "$features" | grep -v ': yes (cu' && fail "a CUDA 13 driver lacks a feature"
fi

"$wrapper" --report "$work/r.jsonl" -- "$demo" >"$work/run.log" 2>&1
echo "(the demo: exit status $?)"
if [ "${driver:-0}" -ge 13 ]; then
  grep "older than this shim's newest entry points" "$work/run.log" && fail "the log says the driver lacks something"
fi
python3 - "$work/r.jsonl" "${driver:-0}" <<'PYTHON' || status=1
import json, sys
records = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
start = next(r for r in records if r["type"] == "start")
missing = start.get("driver_missing")
print("report: cuda_driver_version", start.get("cuda_driver_version"), "driver_missing", json.dumps(missing))
if int(sys.argv[2]) >= 13 and missing != []:
    sys.exit("FAILED: a CUDA 13 driver's start record lists missing entry points (or none was read)")
PYTHON

echo "== no device: CUDA_VISIBLE_DEVICES="
CUDA_VISIBLE_DEVICES= "$wrapper" --report "$work/nodev.jsonl" -- "$demo" >"$work/nodev.log" 2>&1
echo "(exit status $?)"
cat "$work/nodev.log"
grep -q "not a kernel's fault" "$work/nodev.log" || fail "the log does not say it is not a kernel's fault"
grep -Eq "culprit|suspect|in kernel" "$work/nodev.log" && fail "the log names a kernel for a machine without a device"
python3 - "$work/nodev.jsonl" <<'PYTHON' || status=1
import json, sys
records = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
first = next((r for r in records if r["type"] == "first_error"), None)
if not first:
    sys.exit("FAILED: no first_error record")
print("report: error", first["error"], "meaning", first.get("meaning"), "launch", first.get("launch"))
if first.get("meaning") != "environment" or first.get("launch") is not None:
    sys.exit("FAILED: the first error is not an environment error without a launch")
PYTHON
CUDA_VISIBLE_DEVICES= "$wrapper" --localize -- "$demo" >"$work/localize.log" 2>&1
echo "(--localize: exit status $?)"
grep "localize:" "$work/localize.log"
grep -q "localize: no usable CUDA driver or device, so no kernel is at fault" "$work/localize.log" ||
  fail "--localize does not say there is no usable device"
grep -Eq "localize: culprit|localize: run 2" "$work/localize.log" && fail "--localize named a culprit or ran again"
[ $status -eq 0 ] && echo "OK: the driver's features told, and no device is no kernel's fault"
exit $status
# SPDX-License-Identifier: MIT
