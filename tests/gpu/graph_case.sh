#!/usr/bin/env bash
# GPU case for faults inside CUDA graphs (issue 9): a program that prints `FAULT replay=<N>` and then faults in
# the node of its captured graph whose source line carries the marker GRAPH_LOOKUP, in replay N, runs under
# `cuda-blockrun --breadcrumbs --graph-breadcrumbs` (breadcrumb nodes in the graph, nothing blocked) and under
# the debug mode for graphs (`--breadcrumbs --graph-breadcrumbs --block cuGraphLaunch`: breadcrumbs on the streams
# too, so that a blocked replay is exact when other streams' launches completed, as --localize's second run has
# them). Each report's first_error must name
# that replay, the node exactly (the lookup's kernel) with its capture line, and the line marked
# GRAPH_CAPTURE_BEGIN as where the graph was captured; the program's own result must be the fault. Then
# `cuda-blockrun --localize` must give the same node and capture line in its verdict (run 1: the replay, by
# breadcrumbs; run 2: the node, with breadcrumbs inside the graph).
#   graph_case.sh <wrapper> <native|python> <source> <command...>
set -u
wrapper=$1
kind=$2
source=$3
shift 3
. "$(dirname "$0")/require_gpu.sh" "$([ "$kind" = python ] && echo python)"
begin_line=$(grep -n -- "GRAPH_CAPTURE_BEGIN" "$source" | tail -1 | cut -d: -f1)
lookup_line=$(grep -n -- "GRAPH_LOOKUP" "$source" | tail -1 | cut -d: -f1)
directory=$(mktemp -d)
trap 'rm -rf "$directory"' EXIT
status=0
for variant in breadcrumbs debug; do
  case $variant in
    breadcrumbs) options=(--breadcrumbs --graph-breadcrumbs) ;;
    debug) options=(--breadcrumbs --graph-breadcrumbs --block cuGraphLaunch) ;;
  esac
  echo "== cuda-blockrun ${options[*]} --report ... -- $*"
  output=$("$wrapper" "${options[@]}" --report "$directory/$variant.jsonl" -- "$@" 2>&1)
  program_status=$?
  echo "$output"
  if [ "$program_status" -eq 0 ]; then
    echo "FAILED ($variant): the program did not see its fault (exit status 0)"
    status=1
    continue
  fi
  replay=$(echo "$output" | sed -n 's/^FAULT replay=//p' | head -1)
  python3 - "$directory/$variant.jsonl" "$variant" "$kind" "$(basename "$source")" "$begin_line" "$lookup_line" \
    "$replay" <<'PY' || status=1
import json, os, sys
path, variant, kind, source, begin_line, lookup_line, replay = sys.argv[1:8]
begin_line, lookup_line, replay = int(begin_line), int(lookup_line), int(replay)
first = next((r for r in map(json.loads, open(path)) if r.get("type") == "first_error"), None)

def fail(text):
    sys.exit(f"FAILED ({variant}): {text}")

if not first or not first.get("launch") or not first["launch"].get("graph"):
    fail(f"the first error is not a graph launch's: {json.dumps(first)[:2000]}")
graph = first["launch"]["graph"]
capture = graph.get("capture") or {}
print(f"report ({variant}): {first['error']} by {first['surfaced_api']}, method {first.get('method')}, "
      f"certainty {first.get('certainty')}; graph replay {graph['replay']}, {graph.get('nodes')} nodes; "
      f"failed_node {json.dumps(capture.get('failed_node'))}")

def line_of(site):
    where = site.get("callsite" if kind == "native" else "python_callsite") or {}
    return os.path.basename(where.get("file") or ""), where.get("line")

if first.get("certainty") != "exact":
    fail("the graph launch is not named exactly")
if graph["replay"] != replay:
    fail(f"replay {graph['replay']}, expected {replay}")
if line_of(capture.get("begun_at") or {}) != (source, begin_line):
    fail(f"captured at {line_of(capture.get('begun_at') or {})}, expected {source}:{begin_line}")
node = capture.get("failed_node") or {}
if node.get("certainty") != "exact" or len(node.get("positions") or []) != 1:
    fail(f"the failed node is not named exactly: {node}")
position = node["positions"][0]
captured = capture["captured"][position - 1]
kernel = (captured.get("kernel") or "").lower()
print(f"report ({variant}): node {position} of {capture['launches']}: {captured.get('kernel')}, captured at "
      f"{line_of(captured)}")
expected_kernel = ("lookup" in kernel) if kind == "native" else any(w in kernel for w in ("index", "gather", "embedding"))
if not expected_kernel:
    fail(f"node {position} is {captured.get('kernel')}, not the lookup")
if line_of(captured) != (source, lookup_line):
    fail(f"node {position} was captured at {line_of(captured)}, expected {source}:{lookup_line}")
print(f"OK ({variant}): replay {replay}, node {position}: {captured.get('kernel')[:80]}, captured at "
      f"{source}:{lookup_line}, graph captured at {source}:{begin_line}")
PY
done
echo "== cuda-blockrun --localize -- $*"
output=$(TMPDIR=$directory "$wrapper" --localize -- "$@" 2>&1)
echo "$output" | grep -v 'Assertion `'
verdict=$(echo "$output" | sed -n '/localize: culprit: graph launch/,$p')
if ! echo "$verdict" | grep -q "graph: replay $replay of the graph captured at .*$(basename "$source"):$begin_line"; then
  echo "FAILED (localize): the verdict does not name replay $replay of the graph captured at $(basename "$source"):$begin_line"
  status=1
elif ! echo "$verdict" | grep -Eq "^\[cuda-blockrun\]   node [0-9]+ of [0-9]+: kernel .*(lookup|index|gather|embedding).*, captured at .*$(basename "$source"):$lookup_line"; then
  echo "FAILED (localize): the verdict does not name the lookup node captured at $(basename "$source"):$lookup_line"
  status=1
else
  echo "OK (localize): replay $replay, the lookup node, captured at $(basename "$source"):$lookup_line"
fi
exit $status
# SPDX-License-Identifier: MIT
