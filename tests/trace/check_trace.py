#!/usr/bin/env python3
"""Checks a timeline written by `cuda-blockrun --trace` or `cuda-blockrun report --trace` (docs/trace.md).

Used on the simulated stack (tests/trace/CMakeLists.txt) and on the GPU (tests/gpu), so it asks only what
every trace must be, plus what the caller says this one must show:

- it is one JSON document in the Chrome trace-event object format, each event with the fields its phase needs;
- on each track (pid, tid) the slices nest: a slice that begins inside another ends inside it too;
- every flow arrow has both ends, and each end lies inside a slice of its track (where a viewer binds it);
- a process has at most one first-error instant, and at most one slice called its exact culprit;
- with --culprit NAME#N, the culprit's arrow starts in the slice of that launch, and the slice says so; with
  --exact or --not-exact, what it says of its certainty.

Prints one line saying what it found, and exits 1 with a line per problem otherwise.
"""
import argparse
import collections
import json
import os
import re
import sys


def ns(value):
    """A trace time (microseconds, three decimals) in whole nanoseconds."""
    return round(float(value) * 1000)


def innermost(slices, at):
    """The innermost of a track's slices (sorted by start, longest first) that holds `at`, or None."""
    found = None
    for start, end, event in slices:
        if start > at:
            break
        if start <= at <= end:
            found = (start, end, event)  # later starts are inner: nesting is checked before
    return found


def check(trace, options):
    problems = []
    if not isinstance(trace, dict) or not isinstance(trace.get("traceEvents"), list):
        return ["not a trace: no traceEvents array"], None
    events = trace["traceEvents"]
    tracks = collections.defaultdict(list)
    flows = collections.defaultdict(dict)
    errors = collections.Counter()
    error_events = []
    for index, event in enumerate(events):
        phase = event.get("ph")
        where = f"event {index} ({phase} {event.get('name')!r})"
        if phase not in ("X", "i", "s", "f", "M"):
            problems.append(f"{where}: phase {phase!r} is not one this trace writes")
            continue
        if not isinstance(event.get("pid"), int) or not isinstance(event.get("tid"), int):
            problems.append(f"{where}: no integer pid and tid")
            continue
        if phase == "M":
            continue
        if not isinstance(event.get("ts"), (int, float)) or event["ts"] < 0:
            problems.append(f"{where}: no timestamp")
            continue
        track = (event["pid"], event["tid"])
        if phase == "X":
            if not isinstance(event.get("dur"), (int, float)) or event["dur"] < 0:
                problems.append(f"{where}: no duration")
                continue
            tracks[track].append((ns(event["ts"]), ns(event["ts"]) + ns(event["dur"]), event))
        elif phase in ("s", "f"):
            ends = flows[(event["pid"], event.get("id"))]
            if phase in ends:
                problems.append(f"{where}: flow {event.get('id')} has two '{phase}' ends")
            ends[phase] = (track, ns(event["ts"]), event)
        elif phase == "i" and event.get("cat") == "error":
            errors[event["pid"]] += 1
            error_events.append(event)

    # Nesting: by start, the longer first; a slice that starts inside the one on top of the stack must end
    # inside it.
    for track, slices in tracks.items():
        slices.sort(key=lambda s: (s[0], -s[1]))
        stack = []
        for start, end, event in slices:
            # Done with the slice on top: it ended before this one began (or as this one, not empty, began).
            while stack and (stack[-1][1] < start or (stack[-1][1] == start and end > start)):
                stack.pop()
            if stack and end > stack[-1][1]:
                outer = stack[-1][2]
                problems.append(f"track {track}: {event['name']!r} [{start}, {end}] ns overlaps "
                                f"{outer['name']!r} [{stack[-1][0]}, {stack[-1][1]}] ns without nesting in it")
            stack.append((start, end, event))

    culprit_slices = collections.defaultdict(list)
    for track, slices in tracks.items():
        for _, _, event in slices:
            verdict = event.get("args", {}).get("verdict", "")
            if "culprit (exact)" in verdict:
                culprit_slices[track[0]].append(event)
    for pid, count in errors.items():
        if count > 1:
            problems.append(f"process {pid}: {count} first-error instants")
    for pid, slices in culprit_slices.items():
        if len(slices) > 1:
            problems.append(f"process {pid}: {len(slices)} slices are called the exact culprit")

    culprit_flow = None
    for (pid, flow_id), ends in flows.items():
        if set(ends) != {"s", "f"}:
            problems.append(f"flow {flow_id} of process {pid} has only its '{''.join(ends)}' end")
            continue
        bound = {}
        for phase in ("s", "f"):
            track, at, _ = ends[phase]
            enclosing = innermost(tracks.get(track, []), at)
            if not enclosing:
                problems.append(f"flow {flow_id}: its '{phase}' end at {at} ns on track {track} is in no slice")
            bound[phase] = enclosing
        if ends["s"][2].get("name") == "culprit" and bound["s"]:
            culprit_flow = (bound["s"][2], bound["f"][2] if bound["f"] else None)

    found = "no first error"
    if error_events:
        mark = error_events[0]
        found = f"first error {mark['args'].get('error')} at {mark['args'].get('surfaced_api')}"
    wanted = options.culprit or options.culprit_regex
    if wanted:
        if not culprit_flow:
            problems.append(f"no culprit arrow (expected one from {wanted})")
        else:
            slice_event = culprit_flow[0]
            args = slice_event.get("args", {})
            named = str(args.get("kernel_launch"))
            if options.culprit and named != options.culprit:
                problems.append(f"the culprit arrow starts in {named!r} ({slice_event.get('name')!r}), not in "
                                f"{options.culprit}")
            if options.culprit_regex and not re.search(options.culprit_regex, named):
                problems.append(f"the culprit arrow starts in {named!r} ({slice_event.get('name')!r}), which "
                                f"does not match {options.culprit_regex!r}")
            verdict = args.get("verdict", "")
            if "culprit" not in verdict:
                problems.append(f"the culprit's slice does not say it is the culprit: {verdict!r}")
            if options.exact and "culprit (exact)" not in verdict:
                problems.append(f"the culprit is not called exact: {verdict!r}")
            if options.not_exact and "culprit (exact)" in verdict:
                problems.append(f"the culprit is called exact: {verdict!r}")
            found += f", culprit {args.get('kernel_launch')} (launch #{args.get('launch')}): {verdict}"
    if options.no_culprit and culprit_flow:
        problems.append(f"a culprit arrow from {culprit_flow[0].get('name')!r}, where none was expected")

    slices = sum(len(s) for s in tracks.values())
    launches = sum(1 for s in tracks.values() for _, _, e in s if "launch" in e.get("args", {}) and
                   e.get("cat") not in ("gpu", "blocking wait"))
    gpu = sum(1 for s in tracks.values() for _, _, e in s if e.get("cat") == "gpu")
    processes = {pid for pid, _ in tracks}
    if options.min_launches is not None and launches < options.min_launches:
        problems.append(f"{launches} launch slices, fewer than {options.min_launches}")
    if options.max_launches is not None and launches > options.max_launches:
        problems.append(f"{launches} launch slices, more than {options.max_launches}")
    if options.gpu_spans and gpu == 0:
        problems.append("no GPU span on any stream track")
    if options.processes is not None and len(processes) != options.processes:
        problems.append(f"{len(processes)} processes with slices, not {options.processes}")
    dropped = trace.get("otherData", {}).get("dropped_events", 0)
    if options.dropped and not dropped:
        problems.append("no events were dropped (otherData.dropped_events), where some must have been")
    if options.dropped and not any(e.get("cat") == "trace" and e.get("ph") == "i" for e in events):
        problems.append("no instant says that a thread's older events were left out")
    summary = (f"{slices} slices ({launches} launches, {gpu} GPU spans) on {len(tracks)} tracks of "
               f"{len(processes)} process(es), {dropped} dropped; {found}")
    return problems, summary


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("--culprit", help="NAME#N: the first error's culprit arrow starts in this launch")
    parser.add_argument("--culprit-regex", help="the same, NAME#N matched by a regular expression")
    parser.add_argument("--exact", action="store_true", help="the culprit is called exact")
    parser.add_argument("--not-exact", action="store_true", help="the culprit is not called exact")
    parser.add_argument("--no-culprit", action="store_true", help="no culprit arrow at all")
    parser.add_argument("--min-launches", type=int)
    parser.add_argument("--max-launches", type=int)
    parser.add_argument("--max-bytes", type=int, help="the file is at most this large")
    parser.add_argument("--gpu-spans", action="store_true", help="some blocked launch has a GPU span")
    parser.add_argument("--dropped", action="store_true", help="the per-thread bound left events out")
    parser.add_argument("--processes", type=int, help="this many processes have slices")
    options = parser.parse_args()
    size = os.path.getsize(options.trace)
    problems = []
    if options.max_bytes is not None and size > options.max_bytes:
        problems.append(f"{size} bytes, more than {options.max_bytes}")
    try:
        with open(options.trace, encoding="utf-8") as file:
            trace = json.load(file)
    except (OSError, ValueError) as error:
        print(f"check_trace: {options.trace}: not JSON: {error}")
        return 1
    found, summary = check(trace, options)
    problems += found
    for problem in problems:
        print(f"check_trace: {options.trace}: {problem}")
    if problems:
        return 1
    print(f"ok: {options.trace}: {size} bytes, {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
# SPDX-License-Identifier: MIT
