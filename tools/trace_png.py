#!/usr/bin/env python3
"""Draws a trace of `cuda-blockrun --trace` (or `cuda-blockrun report --trace`) as a PNG, without a browser.

    tools/trace_png.py TRACE.json OUT.png [--around-error MS] [--window START_MS END_MS] [--title TEXT]

ui.perfetto.dev is the way to look at a trace; this is for a picture in a document or a CI artifact, made where
there is no network (docs/trace.md's picture was made so). One lane per track (host threads, then the streams'
GPU spans), slices nested in sub-lanes as the viewer nests them, colored by kind, each named where it is wide
enough; the culprit's slice outlined, the flow arrows drawn, the first error marked where it surfaced.
--around-error MS shows the MS milliseconds that end just after the first error (the default where there is
one); --window the span given, in milliseconds of the trace. Needs matplotlib (Debian: python3-matplotlib).
"""
import argparse
import collections
import json
import sys

COLORS = {
    "launch": "#6baed6",
    "blocked launch": "#fd8d3c",
    "blocking wait": "#bdbdbd",
    "gpu": "#74c476",
    "synchronize": "#9e9ac8",
    "library call": "#41b6c4",
    "graph replay": "#c2a83e",
    "error": "#e31a1c",
}


def load(path):
    with open(path, encoding="utf-8") as file:
        trace = json.load(file)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    names, processes = {}, {}
    slices = collections.defaultdict(list)
    flows = collections.defaultdict(dict)
    instants = []
    for event in events:
        phase = event.get("ph")
        track = (event.get("pid"), event.get("tid"))
        if phase == "M" and event.get("name") == "thread_name":
            names[track] = event["args"]["name"]
        elif phase == "M" and event.get("name") == "process_name":
            processes[event.get("pid")] = event["args"]["name"]
        elif phase == "X":
            slices[track].append(event)
        elif phase in ("s", "f"):
            flows[(event.get("pid"), event.get("id"))][phase] = event
        elif phase == "i":
            instants.append(event)
    return names, processes, slices, flows, instants


def depths(events):
    """Each slice's nesting depth on its track (the viewer's sub-rows)."""
    result = {}
    stack = []
    for event in sorted(events, key=lambda e: (e["ts"], -e["dur"])):
        end = event["ts"] + event["dur"]
        while stack and stack[-1] < event["ts"]:
            stack.pop()
        result[id(event)] = len(stack)
        stack.append(end)
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("out")
    parser.add_argument("--around-error", type=float, metavar="MS", default=None)
    parser.add_argument("--window", type=float, nargs=2, metavar=("START_MS", "END_MS"))
    parser.add_argument("--title")
    options = parser.parse_args()
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.patches import FancyArrowPatch, Rectangle
    except ImportError:
        print("trace_png: needs matplotlib (apt-get install -y python3-matplotlib)")
        return 77

    names, processes, slices, flows, instants = load(options.trace)
    errors = [e for e in instants if e.get("cat") == "error"]
    if options.window:
        start, end = (v * 1000 for v in options.window)
    else:
        every = [e for track in slices.values() for e in track]
        if not every:
            print(f"trace_png: {options.trace} has no slices")
            return 1
        start, end = min(e["ts"] for e in every), max(e["ts"] + e["dur"] for e in every)
        span_ms = options.around_error if options.around_error is not None else (1.0 if errors else None)
        if errors and span_ms:
            end = errors[0]["ts"] + span_ms * 1000 * 0.08
            start = end - span_ms * 1000

    def visible(event):
        return event["ts"] + event["dur"] >= start and event["ts"] <= end

    tracks = sorted(slices, key=lambda t: (t[0], t[1]))
    rows = []  # (track, depth count)
    for track in tracks:
        levels = depths(slices[track])
        rows.append((track, levels, 1 + max([levels[id(e)] for e in slices[track] if visible(e)] or [0])))
    height = sum(r[2] for r in rows)
    figure, axes = plt.subplots(figsize=(16, 1.2 + 0.42 * height + 0.3 * len(rows)), dpi=120)
    y = 0
    lane_of = {}
    labels = []
    for track, levels, count in rows:
        lane_of[track] = (y, levels)
        label = names.get(track, f"tid {track[1]}")
        if len({t[0] for t in tracks}) > 1:
            label = f"{processes.get(track[0], track[0])}\n{label}"
        labels.append((y + count / 2, label))
        for event in slices[track]:
            if not visible(event):
                continue
            depth = levels[id(event)]
            left, width = max(event["ts"], start), min(event["ts"] + event["dur"], end) - max(event["ts"], start)
            verdict = event.get("args", {}).get("verdict", "")
            culprit = "culprit" in verdict
            axes.add_patch(Rectangle((left / 1000, y + depth + 0.08), max(width, (end - start) * 0.0008) / 1000,
                                     0.84, facecolor=COLORS.get(event.get("cat"), "#969696"),
                                     edgecolor="#b10026" if culprit else "white", linewidth=2.2 if culprit else 0.3))
            if width > (end - start) * 0.06:
                text = event["name"].split("(")[0]
                axes.text((left + width / 2) / 1000, y + depth + 0.5, text[:60], ha="center", va="center",
                          fontsize=7, clip_on=True)
        y += count + 0.3
    for ends in flows.values():
        if "s" not in ends or "f" not in ends:
            continue
        a, b = ends["s"], ends["f"]
        if not (start <= a["ts"] <= end or start <= b["ts"] <= end):
            continue
        ya = lane_of.get((a["pid"], a["tid"]), (0, {}))[0] + 0.5
        yb = lane_of.get((b["pid"], b["tid"]), (0, {}))[0] + 0.5
        color = "#b10026" if a.get("name") == "culprit" else "#636363"
        # Above the lanes, so that the arrows from many suspects do not hide the slices they leave.
        arrow = FancyArrowPatch((a["ts"] / 1000, ya - 0.45), (b["ts"] / 1000, yb - 0.45),
                                connectionstyle="arc3,rad=-0.08", arrowstyle="-|>", mutation_scale=12,
                                color=color, linewidth=1.6 if a.get("name") == "culprit" else 0.8)
        arrow.set_clip_on(True)
        axes.add_patch(arrow)
    for event in errors:
        if not start <= event["ts"] <= end:
            continue
        lane = lane_of.get((event["pid"], event["tid"]), (0, {}))[0]
        axes.plot([event["ts"] / 1000], [lane - 0.15], marker="v", color="#e31a1c", markersize=11)
        args = event.get("args", {})
        note = event["name"]
        if args.get("culprit"):
            exact = args.get("certainty") == "exact"
            note += (f"\nculprit {args['culprit']} ({'exact' if exact else 'not exact'}, by {args.get('method')})")
        axes.annotate(note, (event["ts"] / 1000, lane - 0.2), xytext=(-14, 22), textcoords="offset points",
                      ha="right", fontsize=8, color="#b10026",
                      bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.85, "pad": 1.5})
    axes.set_xlim(start / 1000, end / 1000)
    axes.set_ylim(y, -1.8)
    axes.set_yticks([p for p, _ in labels])
    axes.set_yticklabels([text for _, text in labels], fontsize=8)
    axes.set_xlabel("milliseconds since the trace began")
    handles = [Rectangle((0, 0), 1, 1, color=c) for c in COLORS.values()]
    axes.legend(handles, list(COLORS), loc="lower left", ncol=len(COLORS), fontsize=7, frameon=False,
                bbox_to_anchor=(0, 1.0))
    if options.title:
        figure.suptitle(options.title, fontsize=10, y=0.995)
    figure.tight_layout()
    figure.savefig(options.out)
    print(f"trace_png: {options.out}: {start / 1000:.3f}-{end / 1000:.3f} ms, {len(rows)} tracks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
# SPDX-License-Identifier: MIT
