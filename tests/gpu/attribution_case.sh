#!/usr/bin/env bash
# GPU case for issues 16 and 38 (the wrong kernel named with certainty; the first try is the right one): a program
# with ONE known faulting launch, made from the line of <source> that ends with <marker>, runs under every mode of
# the wrapper, and each run's attribution is checked (tests/gpu/attribution_check.py; docs/report.md for the
# fields). "The faulting launch": a launch of a kernel matching <expected-kernel-regex> whose record has the
# fields ATTRIBUTION_EXPECT gives (for a kernel that other launches share).
#   plain         --breadcrumbs=0 --report R (the bare shim, the host's view): a first_error must exist; exact ->
#                 its launch is the faulting launch; otherwise it should be among launch + suspects (a WARN if
#                 not, and a failure if the report says its suspects were not cut: suspects_cut false)
#   default       --report R, no mode flag (the user's first try; breadcrumbs on since issue 38): exact, the
#                 faulting launch, and its line as breadcrumbs must have it; or not exact with a localize_command,
#                 which is then run as printed (its leading `cuda-blockrun` is <wrapper>) and must give the
#                 localize mode's verdict; not exact without one fails ("a hint that can pin nothing is a defect")
#   breadcrumbs   --breadcrumbs --report R: exact, the faulting launch, and its line: python_callsite (python) or
#                 callsite (native, where it names a line of <source>) at the marker
#   localize      --localize: the verdict names the faulting launch and the marker's file:line (python: the
#                 `python:` line; native: `launched at`), and every exact first_error of its runs' reports is the
#                 faulting launch; how many runs it took is printed
#   block-kernel  --block "$ATTRIBUTION_BLOCK_NAME" --report R (skipped when unset): the faulting launch is the
#                 launch
#   block-all     --block all --report R: exact, the faulting launch
# In every mode an exact first_error naming another launch is a failure (WRONG EXACT), and so is a missing one.
# ATTRIBUTION_CONCURRENT=1 (programs with several streams or host threads in flight) lets breadcrumbs, block-kernel
# and block-all name the faulting launch among the suspects instead of exactly (never a WRONG EXACT); localize
# and default are checked as above.
# First the program runs once without the wrapper (not checked: its output and status, for comparison).
#   attribution_case.sh <wrapper> <case-name> <expected-kernel-regex> <native|python> <source-with-marker>
#                       <marker> <command...>
# expected-kernel-regex: a Python regular expression searched in the launch's kernel, kernel_base and
#   kernel_mangled (and in the localize verdict's culprit line).
# Environment:
#   ATTRIBUTION_BLOCK_NAME   the --block rule of block-kernel (a kernel name, glob or regex=..., docs/policy.md)
#   ATTRIBUTION_CONCURRENT   1: the program has several streams or threads in flight (above); default 0
#   ATTRIBUTION_EXPECT       space-separated FIELD=VALUE the faulting launch's record has, e.g. `thread_launch=31
#                            grid=12288,1,1` (a dim3 as three numbers); a field absent from a record is a WARN
#   ATTRIBUTION_LINE_POLICY  fail (default) or warn: a wrong line is then a WARN (for a case being written,
#                            before its line is known; no registered case uses it)
#   ATTRIBUTION_RUN_TIMEOUT  seconds per run (default 150; --localize, and the default mode's localize_command,
#                            get three times as long: up to three runs)
#   GPU_CASE_NEEDS           python cases: the modules needed (default torch), as in run_case.sh
#   GPU_MATRIX_OUT           append the MATRIX/RESULT/LOCALIZE summary lines to this file
# Prints `MATRIX <case> <mode> kernel=<ok|wrong|none> line=<ok|wrong|none> exact=<yes|no> wrong_exact=<yes|no>`
# (default: and `hint=<none|ran> hint_runs=<N|?|->`) and `RESULT <case> <mode> <pass|warn|fail|skipped>` per mode.
# Exit status 0 when nothing failed, 1 otherwise, 77 (skip) without a GPU, without the Python modules, or when the
# program itself skips (SKIPPED, exit 77) without the wrapper. Logs and reports are kept, and their directory
# printed, when something failed.
set -u
if [ $# -lt 7 ]; then
  echo "usage: attribution_case.sh <wrapper> <case-name> <expected-kernel-regex> <native|python> <source> <marker> <command...>"
  exit 2
fi
wrapper=$1
case_name=$2
kernel_regex=$3
kind=$4
source=$5
marker=$6
shift 6
program=("$@")
here=$(cd "$(dirname "$0")" && pwd)
checker=$here/attribution_check.py
limit=${ATTRIBUTION_RUN_TIMEOUT:-150}
line_policy=${ATTRIBUTION_LINE_POLICY:-fail}

case $kind in native | python) ;; *) echo "FAILED: the kind must be native or python, not '$kind'"; exit 2 ;; esac
case $line_policy in fail | warn) ;; *) echo "FAILED: ATTRIBUTION_LINE_POLICY must be fail or warn"; exit 2 ;; esac
# The checker's options for the faulting launch: its expected fields and whether streams run concurrently.
expect=()
for field in ${ATTRIBUTION_EXPECT:-}; do
  case $field in
    [a-z_]*=?*) expect+=(--expect "$field") ;;
    *) echo "FAILED: ATTRIBUTION_EXPECT must be FIELD=VALUE words, not '$field'"; exit 2 ;;
  esac
done
case ${ATTRIBUTION_CONCURRENT:-0} in
  0) ;;
  1) expect+=(--concurrent) ;;
  *) echo "FAILED: ATTRIBUTION_CONCURRENT must be 0 or 1"; exit 2 ;;
esac
# The marked line, found by its marker at the end of a line (never a hard-coded number): exactly one.
if [ ! -f "$source" ]; then
  echo "FAILED: no source file $source"
  exit 2
fi
lines=$(awk -v m="$marker" '{ s = $0; sub(/[ \t\r]+$/, "", s)
  if (length(s) >= length(m) && substr(s, length(s) - length(m) + 1) == m) print NR }' "$source")
if [ "$(printf '%s\n' "$lines" | grep -c .)" -ne 1 ]; then
  echo "FAILED: $(basename "$source") must end exactly one line with the marker '$marker' (found at lines: ${lines:-none})"
  exit 2
fi
line=$lines
echo "case $case_name: the faulting kernel matches /$kernel_regex/${ATTRIBUTION_EXPECT:+ ($ATTRIBUTION_EXPECT)}," \
  "launched at $(basename "$source"):$line${ATTRIBUTION_CONCURRENT:+ (ATTRIBUTION_CONCURRENT=$ATTRIBUTION_CONCURRENT)}:"
sed -n "${line}p" "$source"

. "$here/require_gpu.sh"
# Python programs need their modules (GPU_CASE_NEEDS, default torch), checked with the program's own Python.
if [ "$kind" = python ]; then
  for module in ${GPU_CASE_NEEDS:-torch}; do
    case $module in
      torch) check='import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' ;;
      cupy) check='import cupy, sys; sys.exit(0 if cupy.cuda.runtime.getDeviceCount() > 0 else 1)' ;;
      *) check="import $module" ;;
    esac
    if ! "${program[0]}" -c "$check" >/dev/null 2>&1; then
      echo "SKIPPED: ${program[0]} has no $module (with CUDA)"
      exit 77
    fi
  done
fi
if [ ! -x "$wrapper" ]; then
  echo "FAILED: the wrapper $wrapper is not an executable file"
  exit 1
fi
command -v python3 >/dev/null 2>&1 || { echo "FAILED: python3 (for $checker) is not on PATH"; exit 1; }

work=$(mktemp -d "/tmp/blockrun_attr_${case_name}.XXXXXX")
failed=0
echo "case $case_name: logs and reports in $work (kept if a check fails)"

# Prints a run's log: a device-side assert prints a line per failing thread (three are enough), and a long log
# is shown by its first and last 150 lines (the whole log stays in $work).
show_log() {
  awk '/Assertion .* failed/ { if (++n > 3) next } { print }
       END { if (n > 3) printf "(%d more device-side assertion lines)\n", n - 3 }' "$1" >"$1.shown"
  local count
  count=$(wc -l <"$1.shown")
  if [ "$count" -gt 300 ]; then
    head -150 "$1.shown"
    echo "... ($((count - 300)) lines left out: $1) ..."
    tail -150 "$1.shown"
  else
    cat "$1.shown"
  fi
}

# Runs <command> with a time limit, its output in <log>; sets `status`. Arguments: log, seconds, command...
run_logged() {
  local log=$1 seconds=$2
  shift 2
  local start=$SECONDS
  # timeout leads a process group of its own and signals all of it: the program's children end too.
  timeout -k 10 "$seconds" "$@" >"$log" 2>&1
  status=$?
  show_log "$log"
  echo "(exit status $status after $((SECONDS - start)) s)"
}

# A program that skipped itself (SKIPPED, exit 77).
skipped_itself() {
  [ "$status" -eq 77 ] && grep -q '^SKIPPED' "$1"
}

matrix_line() {
  echo "$1"
  if [ -n "${GPU_MATRIX_OUT:-}" ]; then echo "$1" >>"$GPU_MATRIX_OUT"; fi
}

# ---- without the wrapper: the program's own behaviour, for comparison (and its skip) ----
echo
echo "== $case_name / native (no wrapper): ${program[*]}"
run_logged "$work/native.log" "$limit" "${program[@]}"
if skipped_itself "$work/native.log"; then
  echo "SKIPPED: the program skipped itself (above)"
  rm -rf "$work"
  exit 77
fi
native_status=$status
if [ "$native_status" -eq 124 ] || [ "$native_status" -eq 137 ]; then
  echo "WARN (native): the program did not end within $limit s without the wrapper"
elif [ "$native_status" -eq 0 ]; then
  echo "WARN (native): the program exited 0 without the wrapper: it did not see its own fault"
fi

# ---- the modes ----
# Arguments: mode, wrapper options... The default mode's checker runs the report's localize_command itself
# (with this wrapper, in this directory: the program's), when the first_error is not exact.
run_mode() {
  local mode=$1
  shift
  local report=$work/$mode.jsonl
  echo
  echo "== $case_name / $mode: $wrapper $* --report $report -- ${program[*]}"
  run_logged "$work/$mode.log" "$limit" "$wrapper" "$@" --report "$report" -- "${program[@]}"
  local problem=
  if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
    problem="the run did not end within $limit s (timeout stopped it; ATTRIBUTION_RUN_TIMEOUT)"
  elif skipped_itself "$work/$mode.log"; then
    problem="the program skipped itself under the wrapper, but not without it (exit status $native_status)"
  fi
  python3 "$checker" report --case "$case_name" --mode "$mode" --report "$report" --regex "$kernel_regex" \
    ${expect[@]+"${expect[@]}"} --kind "$kind" --source "$source" --line "$line" --line-policy "$line_policy" \
    --status "$status" --run-problem "$problem" --wrapper "$wrapper" --work "$work" \
    --hint-timeout "$((3 * limit))" -- "${program[@]}" || failed=1
}

# plain is the bare shim: with no mode flag the wrapper turns breadcrumbs on (issue 38), which is `default`.
run_mode plain --breadcrumbs=0
run_mode default
run_mode breadcrumbs --breadcrumbs

echo
echo "== $case_name / localize: $wrapper --localize -- ${program[*]}"
run_logged "$work/localize.log" "$((3 * limit))" "$wrapper" --localize -- "${program[@]}"
localize_failed=0
problem=
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
  problem="--localize did not end within $((3 * limit)) s (timeout stopped it; ATTRIBUTION_RUN_TIMEOUT)"
elif skipped_itself "$work/localize.log"; then
  problem="the program skipped itself under the wrapper, but not without it (exit status $native_status)"
fi
# Its reports' directory (it keeps it): read for the diagnostics, then removed with $work or kept beside it.
reports_dir=$(sed -n 's/.*localize: run 1: .*(reports in \(.*\))$/\1/p' "$work/localize.log" | head -1)
case $reports_dir in */cuda-blockrun-localize.*) ;; *) reports_dir= ;; esac
python3 "$checker" localize --case "$case_name" --log "$work/localize.log" --regex "$kernel_regex" \
  ${expect[@]+"${expect[@]}"} --kind "$kind" --source "$source" --line "$line" --line-policy "$line_policy" \
  --status "$status" --run-problem "$problem" ${reports_dir:+--reports-dir "$reports_dir"} || localize_failed=1
if [ -n "$reports_dir" ] && [ -d "$reports_dir" ]; then
  if [ "$localize_failed" -ne 0 ]; then
    mv "$reports_dir" "$work/" && echo "(localize's reports moved to $work/$(basename "$reports_dir"))"
  else
    rm -rf "$reports_dir"
  fi
fi
[ "$localize_failed" -eq 0 ] || failed=1

if [ -n "${ATTRIBUTION_BLOCK_NAME:-}" ]; then
  run_mode block-kernel --block "$ATTRIBUTION_BLOCK_NAME"
else
  echo
  echo "== $case_name / block-kernel: skipped (ATTRIBUTION_BLOCK_NAME is not set for this case)"
  matrix_line "RESULT $case_name block-kernel skipped"
fi
run_mode block-all --block all

echo
if [ "$failed" -ne 0 ]; then
  echo "FAILED: case $case_name: see the FAILED lines above; logs and reports kept in $work"
  exit 1
fi
rm -rf "$work"
echo "OK: case $case_name: no wrong exact culprit, and every mode found what it must"
exit 0
# SPDX-License-Identifier: MIT
