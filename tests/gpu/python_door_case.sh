#!/usr/bin/env bash
# GPU case for issue 39 (the Python door): a PyTorch program with ONE known faulting launch (the line of <source>
# that ends with <marker>), run through `import cuda_blockrun` and `python -m cuda_blockrun` instead of the
# wrapper; each run is checked by tests/gpu/attribution_check.py as attribution_case.sh checks the wrapper's runs,
# so that both doors answer to the same rules.
#   import-default      `import cuda_blockrun` as the script's first line, no settings (breadcrumbs, as the
#                       wrapper's default run): checked as `default` (exact and its line, or a hint that, run,
#                       pins it)
#   import-breadcrumbs  the same with CUDA_BLOCKRUN_BREADCRUMBS=1: exact, the faulting launch, its Python line
#   import-block-kernel CUDA_BLOCKRUN_BLOCK=<ATTRIBUTION_BLOCK_NAME>: the faulting launch is the launch
#   import-block-all    CUDA_BLOCKRUN_BLOCK=all: exact, the faulting launch
#   import-after-torch  `import torch` first, then `import cuda_blockrun` (CUDA not yet initialized: rebound after
#                       the fact): as import-breadcrumbs, and the import says it came late
#   import-too-late     a CUDA context made before `import cuda_blockrun`: it must say it is NOT enabled, change
#                       nothing (no report, the program's own exit status) and never name a culprit
#   dash-m-localize     `python -m cuda_blockrun --localize <unmodified script>`: checked as `localize`
#   dash-m-traceback    `python -m cuda_blockrun <unmodified script>` with the program's error uncaught
#                       (GPU_CASE_RAISE=1): the traceback ends with the note naming the kernel and the marker's line
#   python_door_case.sh <package-parent> <wrapper> <case-name> <expected-kernel-regex> <source-with-marker> <marker>
# <package-parent>: the directory holding the staged package cuda_blockrun/ (build/python).
# Environment: ATTRIBUTION_BLOCK_NAME, ATTRIBUTION_RUN_TIMEOUT, GPU_MATRIX_OUT as in attribution_case.sh;
# GPU_CASE_LOGS=DIR keeps the runs' logs and reports there.
# Prints MATRIX/RESULT lines per mode (attribution_check.py), exit status 0 when nothing failed, 77 without a GPU
# or PyTorch with CUDA.
set -u
if [ $# -lt 6 ]; then
  echo "usage: python_door_case.sh <package-parent> <wrapper> <case-name> <kernel-regex> <source> <marker>"
  exit 2
fi
package_parent=$1 wrapper=$2 case_name=$3 kernel_regex=$4 source=$5 marker=$6
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=require_gpu.sh
. "$here/require_gpu.sh" python
checker=$here/attribution_check.py
limit=${ATTRIBUTION_RUN_TIMEOUT:-150}
if [ ! -f "$package_parent/cuda_blockrun/__init__.py" ]; then
  echo "FAILED: no staged package at $package_parent/cuda_blockrun (build the tree: it stages build/python)"
  exit 1
fi
work=$(mktemp -d "/tmp/blockrun_door_${case_name}.XXXXXX")
echo "case $case_name: logs and reports in $work (kept if a check fails)"
failed=0
export PYTHONPATH=$package_parent${PYTHONPATH:+:$PYTHONPATH}
unset CUDA_BLOCKRUN_BLOCK CUDA_BLOCKRUN_BREADCRUMBS CUDA_BLOCKRUN_REPORT

# A copy of <source> with <prelude> (one line) put before its first line, and the marker's line in the copy.
copy_with() {
  local name=$1 prelude=$2
  { echo "$prelude"; cat "$source"; } >"$work/$name.py"
  grep -n -F -- "$marker" "$work/$name.py" | head -1 | cut -d: -f1
}
marker_line=$(grep -n -F -- "$marker" "$source" | head -1 | cut -d: -f1)

check_report() {  # mode, attribution mode, report, log, script, line, status
  local mode=$1 as=$2 report=$3 log=$4 script=$5 line=$6 status=$7
  python3 "$checker" report --case "${case_name}_door" --mode "$as" --report "$report" --regex "$kernel_regex" \
    --kind python --source "$script" --line "$line" --status "$status" --wrapper "$wrapper" --work "$work" \
    --hint-timeout "$((3 * limit))" -- python3 "$script" || failed=1
  echo "(that was $mode)"
}

run_import() {  # mode, attribution mode, prelude, environment...
  local mode=$1 as=$2 prelude=$3
  shift 3
  local line report=$work/$mode.jsonl
  line=$(copy_with "$mode" "$prelude")
  echo
  echo "== $case_name / $mode: $* python3 $mode.py (first line: $prelude)"
  env "$@" CUDA_BLOCKRUN_REPORT="$report" timeout "$limit" python3 "$work/$mode.py" >"$work/$mode.log" 2>&1
  local status=$?
  tail -25 "$work/$mode.log"
  check_report "$mode" "$as" "$report" "$work/$mode.log" "$work/$mode.py" "$line" "$status"
}

run_import import-default default "import cuda_blockrun  # the Python door"
run_import import-breadcrumbs breadcrumbs "import cuda_blockrun  # the Python door" CUDA_BLOCKRUN_BREADCRUMBS=1
if [ -n "${ATTRIBUTION_BLOCK_NAME:-}" ]; then
  run_import import-block-kernel block-kernel "import cuda_blockrun  # the Python door" \
    CUDA_BLOCKRUN_BLOCK="$ATTRIBUTION_BLOCK_NAME"
fi
run_import import-block-all block-all "import cuda_blockrun  # the Python door" CUDA_BLOCKRUN_BLOCK=all
run_import import-after-torch breadcrumbs "import torch, cuda_blockrun  # torch first, CUDA not initialized" \
  CUDA_BLOCKRUN_BREADCRUMBS=1
if ! grep -q "imported after .*CUDA not yet initialized" "$work/import-after-torch.log"; then
  echo "FAILED (import-after-torch): the import did not say it came after torch's CUDA libraries"
  failed=1
fi

# Too late: a context exists before the import. Nothing may change: no report, the program's own status.
echo
echo "== $case_name / import-too-late"
copy_with too-late "import torch; torch.zeros(1, device='cuda'); import cuda_blockrun  # too late" >/dev/null
CUDA_BLOCKRUN_REPORT=$work/too-late.jsonl timeout "$limit" python3 "$work/too-late.py" >"$work/too-late.log" 2>&1
too_late_status=$?
tail -8 "$work/too-late.log"
if ! grep -q "CUDA was already initialized in this process" "$work/too-late.log" ||
  ! grep -q "NOT enabled" "$work/too-late.log"; then
  echo "FAILED (import-too-late): it did not say that it is not enabled, and why"
  failed=1
fi
if [ -e "$work/too-late.jsonl" ] || grep -q "^\[cuda-blockrun\] first error\|culprit" "$work/too-late.log"; then
  echo "FAILED (import-too-late): it acted (a report, or a verdict) although it said it was not enabled"
  failed=1
fi
echo "RESULT ${case_name}_door import-too-late $([ $failed -eq 0 ] && echo pass || echo fail) (exit status $too_late_status)"

# python -m cuda_blockrun --localize, the script unmodified.
echo
echo "== $case_name / dash-m-localize: python3 -m cuda_blockrun --localize $source"
timeout "$((3 * limit))" python3 -m cuda_blockrun --localize "$source" >"$work/localize.log" 2>&1
status=$?
tail -15 "$work/localize.log"
python3 "$checker" localize --case "${case_name}_door" --mode localize --log "$work/localize.log" \
  --regex "$kernel_regex" --kind python --source "$source" --line "$marker_line" --status "$status" || failed=1

# python -m cuda_blockrun, the error left uncaught: the traceback ends with the verdict's note.
echo
echo "== $case_name / dash-m-traceback: GPU_CASE_RAISE=1 python3 -m cuda_blockrun $source"
GPU_CASE_RAISE=1 timeout "$limit" python3 -m cuda_blockrun "$source" >"$work/traceback.log" 2>&1
tail -12 "$work/traceback.log"
python3 - "$work/traceback.log" "$kernel_regex" "$source" "$marker_line" <<'EOF' || failed=1
import re, sys
log, regex, source, line = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
text = open(log, errors="replace").read()
at = max(text.rfind("Error: "), text.rfind("Error("))
note = text[text.find("\n", at):] if at >= 0 else ""
culprit = [l for l in note.splitlines() if "[cuda-blockrun] culprit (exact" in l]
problems = []
if at < 0 or "Traceback (most recent call last)" not in text:
    problems.append("no traceback")
if not culprit or not re.search(regex, culprit[0]):
    problems.append("the note after the traceback names no exact culprit matching %s" % regex)
if "Python: %s:%s" % (source, line) not in note:
    problems.append("the note does not give the marker's line %s:%s" % (source, line))
if "runpy" in text[text.rfind("Traceback"):]:
    problems.append("the runner's frames are in the traceback")
for problem in problems:
    print("FAILED (dash-m-traceback): " + problem)
print("RESULT dash-m-traceback %s" % ("fail" if problems else "pass"))
sys.exit(1 if problems else 0)
EOF

# GPU_CASE_LOGS=DIR keeps every run's log and report there (the H200 output docs/python.md shows).
if [ -n "${GPU_CASE_LOGS:-}" ]; then mkdir -p "$GPU_CASE_LOGS" && cp -r "$work" "$GPU_CASE_LOGS/"; fi
if [ "$failed" -eq 0 ]; then
  rm -rf "$work"
  echo "PASSED: $case_name through the Python door"
else
  echo "FAILED: $case_name through the Python door (logs in $work)"
fi
exit "$failed"
# SPDX-License-Identifier: MIT
