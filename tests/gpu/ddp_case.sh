#!/usr/bin/env bash
# GPU case (issue 10): a PyTorch DDP job of 2 ranks on 2 GPUs under torchrun, the wrapper being torchrun's
# per-rank command (docs/distributed.md), in which rank 1's embedding lookup reads an out-of-range index at
# step 40 while rank 0 goes on into the step's allreduce and waits there (tests/gpu/ddp_fault.py):
#   torchrun --standalone --nproc_per_node 2 --no_python <wrapper> [--breadcrumbs] --report DIR/report.%r.jsonl \
#       -- <python> ddp_fault.py --steps 60 --fault-step 40 --fault-rank 1
# It runs twice: plain (nothing blocked, no breadcrumbs: the host's view) and with --breadcrumbs. Each run must
# show, or the case prints a FAILED: line and fails:
#  (a) the job ended within its time limit (no deadlock) with a non-zero status, after rank 1 printed its
#      FAULT line;
#  (b) rank 1's report (report.1.jsonl) has a first_error, a device-side assert or illegal address, that names
#      the embedding's kernel: a demangled name with index, gather or embedding in it that is neither NCCL's
#      nor a backward kernel (PyTorch 2.11 launches vectorized_gather_kernel for this lookup; others
#      indexSelect*Index);
#        plain: among the launches not known to have completed (first_error.launch or .suspects; the host's
#          view keeps a stream's last 8 launches, and ddp_fault.py reads the loss 3-4 launches after the lookup,
#          so it is there unless the shim lost it). No Python line is checked here: with nothing blocked, no
#          breadcrumbs and --callsites auto, a suspect's record keeps only the caller of the CUDA entry point
#          (docs/callsites.md), so the report has none to check;
#        --breadcrumbs: found by breadcrumbs and exact (only the compute stream has unfinished work when the
#          error surfaces: rank 1 reads its loss before the step's allreduce is enqueued), and its Python line,
#          first_error.launch.python_callsite (the program's own frame, kept for every launch with breadcrumbs;
#          docs/localize.md, docs/report.md), is ddp_fault.py at the line marked FAULT LINE;
#  (c) `<wrapper> report DIR` says rank 1 failed first, and `<wrapper> report --json DIR` too: two processes
#      read, the first failure rank 1's, its outcome cuda_error.
#   ddp_case.sh <wrapper> <python>
# Skips (77) without a GPU, with fewer than 2 GPUs, without PyTorch with CUDA and NCCL, or without torchrun.
# DDP_CASE_TIMEOUT: each run's time limit in seconds (default 130, so both runs fit in ctest's 300; a normal
# run takes well under a minute). The reports and logs are kept, and their directory printed, when a check fails.
set -u
wrapper=$1
python=$2
here=$(cd "$(dirname "$0")" && pwd)
script=$here/ddp_fault.py
limit=${DDP_CASE_TIMEOUT:-130}
. "$here/require_gpu.sh"

skip() {
  echo "SKIPPED: $*"
  exit 77
}
# What this Python's PyTorch offers, asked once (importing torch takes seconds): CUDA, the GPUs it sees, the
# NCCL backend, torchrun's module.
read -r cuda gpus nccl run_module <<<"$("$python" -c '
import importlib.util, torch, torch.distributed as d
print(int(torch.cuda.is_available()), torch.cuda.device_count(), int(d.is_available() and d.is_nccl_available()),
      int(importlib.util.find_spec("torch.distributed.run") is not None))' 2>/dev/null)"
[ "${cuda:-0}" = 1 ] || skip "$python has no PyTorch with CUDA"
[ "${gpus:-0}" -ge 2 ] ||
  skip "this case needs 2 GPUs; PyTorch sees $gpus (nvidia-smi -L lists $(nvidia-smi -L 2>/dev/null | grep -c '^GPU'))"
[ "${nccl:-0}" = 1 ] || skip "$python's PyTorch has no NCCL backend"
if command -v torchrun >/dev/null 2>&1; then
  torchrun=(torchrun)
elif [ "${run_module:-0}" = 1 ]; then
  torchrun=("$python" -m torch.distributed.run)  # what the torchrun script runs, where it is not on PATH
else
  skip "no torchrun (not on PATH, and $python has no torch.distributed.run)"
fi

# The line the report must name: found by its marker, never hard-coded.
line=$(grep -n -- '# FAULT LINE$' "$script" | cut -d: -f1)
if [ "$(printf '%s\n' "$line" | grep -c .)" -ne 1 ]; then
  echo "FAILED: ddp_fault.py must mark exactly one line with '# FAULT LINE' (found at: ${line:-none})"
  exit 1
fi
echo "the embedding lookup that faults: ddp_fault.py:$line"

work=$(mktemp -d /tmp/blockrun_ddp.XXXXXX)
failed=0
variant=
fail() {
  echo "FAILED ($variant): $*"
  failed=1
}

# torchrun starts each worker in a session of its own, so a torchrun that had to be killed leaves its workers
# behind, holding their GPUs. Each worker prints its pid first: end those still running ddp_fault.py.
end_leftovers() {
  local pid
  for pid in $(sed -n 's/.*RANK [0-9]* pid \([0-9]*\) .*/\1/p' "$1"); do
    [ -r "/proc/$pid/cmdline" ] || continue  # ended, as it should have
    if tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q 'ddp_fault\.py'; then
      echo "ending a worker left running: pid $pid"
      kill -KILL "$pid" 2>/dev/null
    fi
  done
}

# (b): rank 1's first error, from its report. Arguments: report, variant, script, marked line.
check_rank1_report() {
  "$python" - "$@" <<'PYTHON'
import json, os, re, sys

report, variant, script, line = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
problems = []
if not os.path.isfile(report):
    listing = sorted(os.listdir(os.path.dirname(report)))
    sys.exit(f"FAILED ({variant}): rank 1 wrote no report {os.path.basename(report)} (the directory holds {listing})")
records = []
for text in open(report):
    try:
        records.append(json.loads(text))
    except ValueError:
        pass  # a record cut short by a kill; the others still count
first = next((r for r in records if r.get("type") == "first_error"), None)
if first is None:
    sys.exit(f"FAILED ({variant}): rank 1's report has no first_error (records: {[r.get('type') for r in records]})")

LOOKUP = re.compile(r"index|gather|embedding", re.IGNORECASE)
NOT_LOOKUP = re.compile(r"nccl|backward", re.IGNORECASE)


def is_nccl(launch):
    return bool(launch.get("collective")) or "nccl" in (launch.get("kernel") or "").lower()


def is_lookup(launch):
    kernel = launch.get("kernel") or ""
    return bool(LOOKUP.search(kernel)) and not NOT_LOOKUP.search(kernel) and not launch.get("collective")


def describe(launch):
    site = launch.get("python_callsite") or {}
    python = f"{os.path.basename(site.get('file') or '?')}:{site.get('line')}" if site else "none"
    return (f"#{launch.get('seq')} {(launch.get('kernel') or launch.get('api') or '?')[:150]} "
            f"stream {launch.get('stream')}, python {python} ({launch.get('python_status')})")


launch = first.get("launch")
suspects = first.get("suspects") or []
print(f"rank 1: first error {first.get('error')} returned by {first.get('surfaced_api')} ({first.get('how')}); "
      f"certainty {first.get('certainty')}, method {first.get('method')}, pin rule {first.get('pin_rule')}")
print(f"rank 1: launch: {describe(launch) if launch else 'none'}")
for suspect in suspects:
    print(f"rank 1: suspect: {describe(suspect)}")

if not re.search(r"assert|illegal|launch_?failure|launch_failed", first.get("error") or "", re.IGNORECASE):
    problems.append(f"the error is {first.get('error')}, not a device-side assert or an illegal address")
marker = os.path.basename(script)
if variant == "plain":
    # The host's view: the culprit is among the launches not known to have completed.
    if launch and is_nccl(launch):
        problems.append("the error is pinned to an NCCL launch")
    found = [l for l in ([launch] if launch else []) + suspects if is_lookup(l)]
    if not found:
        problems.append("the embedding's kernel is neither the launch nor among the suspects")
    else:
        print(f"OK ({variant}): the embedding's kernel is among the suspects: {describe(found[0])}")
else:
    if first.get("method") != "breadcrumbs":
        problems.append(f"found by {first.get('method')}, not by breadcrumbs")
    if first.get("certainty") != "exact" or not launch:
        problems.append(f"not exact ({first.get('certainty')}): {len(suspects)} candidates")
    elif not is_lookup(launch):
        problems.append(f"the culprit is not the embedding's kernel: {describe(launch)}")
    else:
        site = launch.get("python_callsite") or {}
        where = (os.path.basename(site.get("file") or ""), site.get("line"))
        if where != (marker, line):
            problems.append(f"the Python line is {site.get('file')}:{site.get('line')}, not {marker}:{line}")
        else:
            print(f"OK ({variant}): exact, the embedding's kernel, launched at {marker}:{line} "
                  f"in {site.get('function')}")
for problem in problems:
    print(f"FAILED ({variant}): rank 1's report: {problem}")
sys.exit(1 if problems else 0)
PYTHON
}

# (c): the merged verdict as JSON. Arguments: the file report --json wrote, variant.
check_job_json() {
  "$python" - "$@" <<'PYTHON'
import json, sys

path, variant = sys.argv[1], sys.argv[2]
try:
    job = json.load(open(path))
except ValueError as error:
    sys.exit(f"FAILED ({variant}): report --json printed no JSON object: {error}")
order = job.get("order") or []
for process in order:
    description = (process.get("description") or "")[:200]
    print(f"job: rank {process.get('rank')} (pid {process.get('pid')}): {process.get('outcome')}: {description}")
problems = []
if job.get("processes") != 2:
    problems.append(f"{job.get('processes')} processes read, not 2 (a report per rank)")
first = job.get("first_failure")
culprit = next((p for p in order if p.get("index") == first), None) if first is not None else None
if culprit is None:
    problems.append("no process failed, it says")
elif culprit.get("rank") != 1 or culprit.get("outcome") != "cuda_error":
    problems.append(f"the first to fail is rank {culprit.get('rank')} ({culprit.get('outcome')}), "
                    "not rank 1 with a CUDA error")
for problem in problems:
    print(f"FAILED ({variant}): report --json: {problem}")
sys.exit(1 if problems else 0)
PYTHON
}

run_variant() {
  variant=$1
  shift
  local dir=$work/$variant
  local log=$dir/torchrun.log
  mkdir -p "$dir"
  # (--nproc_per_node and --no_python: the spellings every torchrun accepts; 2.x also takes --nproc-per-node.)
  local command=("${torchrun[@]}" --standalone --nproc_per_node 2 --no_python "$wrapper" "$@"
                 --report "$dir/report.%r.jsonl" -- "$python" "$script" --steps 60 --fault-step 40 --fault-rank 1)
  echo "== $variant: ${command[*]}"
  local start=$SECONDS
  # -k: torchrun gets 10 s to stop its workers after the TERM before it is killed.
  timeout -k 10 "$limit" "${command[@]}" >"$log" 2>&1
  local status=$? elapsed=$((SECONDS - start))
  # A device-side assert prints a line per failing GPU thread: three are enough.
  awk '/Assertion .* failed/ { if (++n > 3) next } { print }
       END { if (n > 3) printf "(%d more device-side assertion lines)\n", n - 3 }' "$log"
  echo "(torchrun exit status $status after $elapsed s)"
  end_leftovers "$log"

  # (a) the job ended, by the fault.
  if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
    fail "the job had not ended after $limit s (a deadlock): timeout stopped torchrun"
  elif [ "$status" -eq 0 ]; then
    fail "torchrun exited 0: the fault did not end the job"
  fi
  grep -q 'FAULT rank=1 step=40' "$log" || fail "rank 1 printed no 'FAULT rank=1 step=40': the fault was not reached"

  # (b) rank 1's own report.
  check_rank1_report "$dir/report.1.jsonl" "$variant" "$script" "$line" || failed=1

  # (c) the merged verdict, as text and as JSON.
  local verdict report_status json_status
  verdict=$("$wrapper" report "$dir" 2>&1)
  report_status=$?
  printf '%s\n' "$verdict" | sed 's/^/report: /'
  [ "$report_status" -eq 0 ] || fail "cuda-blockrun report exited $report_status"
  printf '%s\n' "$verdict" | grep -q '^first to fail: rank 1 (' ||
    fail "cuda-blockrun report does not say that rank 1 failed first"
  "$wrapper" report --json "$dir" >"$dir/job.json" 2>&1
  json_status=$?
  [ "$json_status" -eq 0 ] || fail "cuda-blockrun report --json exited $json_status: $(head -c 300 "$dir/job.json")"
  check_job_json "$dir/job.json" "$variant" || failed=1
}

run_variant plain
run_variant breadcrumbs --breadcrumbs

if [ "$failed" -ne 0 ]; then
  echo "reports and logs kept in $work"
  exit 1
fi
rm -rf "$work"
echo "OK: both runs ended, rank 1's report names the embedding's kernel (and, with breadcrumbs, ddp_fault.py:$line), and the merged report says rank 1 failed first"
# SPDX-License-Identifier: MIT
