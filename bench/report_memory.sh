#!/usr/bin/env bash
# Peak memory and time of `cuda-blockrun report` over a large job (issue 40, N4): RANKS report files of LAUNCHES
# launch records each, made from a real report of the simulated stack (`cuda_app steps` run with
# --log-launches and breadcrumbs; one rank faults at stencil#13), every launch record a copy of a real one
# with its own launch number. Measures the verdict and --trace (written to TRACE, /dev/null by default: the
# memory does not depend on where it goes, and a trace of 8 million launches takes gigabytes), each RUNS
# times, and prints the median of each (GNU time's maximum resident set size) beside one process of one
# launch record.
#   bench/report_memory.sh <build-dir> [ranks=8] [launches=1000000] [runs=3] [trace=/dev/null]
set -euo pipefail
build=$1
ranks=${2:-8}
launches=${3:-1000000}
runs=${4:-3}
trace=${5:-/dev/null}
wrapper=$build/bin/cuda-blockrun
export LD_LIBRARY_PATH=$build/sim/lib
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One real report: its start record, a launch record, its first error and summary.
CUDA_SIM_FAULT=stencil:13 CUDA_SIM_FAULT_SURFACES=sync "$wrapper" --breadcrumbs --log-launches \
  --report "$work/seed.jsonl" -- "$build/bin/cuda_app" steps >/dev/null 2>&1 || true
python3 - "$work" "$ranks" "$launches" <<'EOF'
import json, sys
work, ranks, launches = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
records = [json.loads(line) for line in open(f"{work}/seed.jsonl") if line.strip()]
def first(kind):
    return next(r for r in records if r["type"] == kind)
start, launch, error = first("start"), first("launch"), first("first_error")
summary = next((r for r in records if r["type"] == "summary"), {"type": "summary", "time": start["time"] + 1})
SENTINEL = 987654321987
def dump(record):
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False)
for rank in range(ranks):
    pid = 40000 + rank
    for record in (start, launch, error, summary):
        record["pid"] = pid
    start["rank"] = rank
    launch["launch"]["seq"] = SENTINEL
    head, tail = dump(launch).split(str(SENTINEL))
    with open(f"{work}/r.{rank}.jsonl", "w") as out:
        out.write(dump(start) + "\n")
        out.writelines(f"{head}{seq}{tail}\n" for seq in range(1, launches + 1))
        if rank == 3:  # the rank that faults
            out.write(dump(error) + "\n")
        out.write(dump(summary) + "\n")
    if rank == 0:
        with open(f"{work}/one.jsonl", "w") as out:
            out.write(dump(start) + "\n" + f"{head}1{tail}\n" + dump(summary) + "\n")
EOF
rm -f "$work/seed.jsonl"
bytes=$(cat "$work"/r.*.jsonl | wc -c)

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
# "KB SECONDS" of one run (exit status 1: a process failed, as the job's does; GNU time then says so on a
# line of its own before the numbers).
measure() { /usr/bin/time -f "%M %e" -o "$work/time" "$wrapper" report "$@" >/dev/null 2>&1 || true; tail -1 "$work/time"; }
row() {
  local name=$1 input=$2
  shift 2
  local kb=() seconds=()
  for ((r = 0; r < runs; ++r)); do
    read -r k s < <(measure "$@" $input)
    kb+=("$k") seconds+=("$s")
  done
  printf '| %s | %s | %.1f | %.2f |\n' "$name" "$([ "$input" = "$work/one.jsonl" ] && echo 1 || echo "$ranks x $launches")" \
    "$(printf '%s\n' "${kb[@]}" | median | awk '{print $1 / 1024}')" "$(printf '%s\n' "${seconds[@]}" | median)"
}
printf 'reports: %d x %d launch records, %.1f MB in all; median of %d runs\n\n' "$ranks" "$launches" \
  "$(awk -v b="$bytes" 'BEGIN { print b / 1e6 }')" "$runs"
printf '| command | launch records | peak memory (MB) | seconds |\n|---|---|---|---|\n'
row "verdict" "$work/one.jsonl"
row "verdict" "$work/r.*.jsonl"
row "--trace $trace" "$work/one.jsonl" --trace "$trace"
row "--trace $trace" "$work/r.*.jsonl" --trace "$trace"
# SPDX-License-Identifier: MIT
