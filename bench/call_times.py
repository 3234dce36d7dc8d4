"""Where the shim's cost lies in a workload, from inside one process: reads the call tallies that a switched run
writes with BLOCKRUN_BENCH_CALLS=FILE (bench/bench_switch.py; the timer is in shim/bench_switch.h) and prints,
for the chunks with the shim on and those switched off:

- the chunk's wall time, the time in outermost hooked calls, and the rest: the time outside every call the shim
  wraps (the program's own work, and CUDA calls the shim does not hook);
- per hook, the calls per chunk and the time per call, on and off, and the difference;
- inside the driver launch wrappers, the record, the real launch call and the breadcrumb (slot, write, note) on
  their own; the breadcrumb apart where it wrote and where it did not (--breadcrumb-every N).

    BLOCKRUN_BENCH_CALLS=/tmp/calls.tsv LD_PRELOAD=build/lib/libcuda_blockrun_bench.so \\
        python3 bench/torch_train.py --chunks 20
    python3 bench/call_times.py /tmp/calls.tsv

Medians over chunks, and of the differences over pairs of neighbouring chunks (on - off); the timer's own two
clock reads a call fall on both states alike, but its spans inside a driver launch only on the shim's side.
"""
import argparse
import collections
import statistics


def read_chunks(path):
    """{(pair, state): {"wall": seconds, "calls": {(on_off, name): (calls, ns)}}} from one tallies file, and
    the timer's own ns a span (measured when it was turned on; None where the file lacks it)."""
    chunks, span_ns = {}, None
    with open(path) as lines:
        for line in lines:
            label, on_off, name, calls, ns = line.rstrip("\n").split("\t")
            pair, state, wall = label.split(" ")
            if name.startswith("the timer"):
                span_ns = int(ns) / int(calls)
            if pair == "warm-up":
                continue
            chunk = chunks.setdefault((pair, int(state)), {"wall": float(wall), "calls": {}})
            chunk["calls"][(on_off, name)] = (int(calls), int(ns))
    return chunks, span_ns


def chunk_times(chunk, state):
    """A chunk's wall time, its time in outermost hooked calls and outside them, in us."""
    wall = chunk["wall"] * 1e6
    hooked = chunk["calls"].get(("on" if state else "off", "outermost hooked calls"), (0, 0))[1] / 1e3
    return wall, hooked, wall - hooked


def paired_times(chunks):
    """Medians over pairs of (on - off) for wall, hooked and outside time, in us a chunk."""
    differences = []
    for pair in sorted({pair for pair, _ in chunks}):
        if (pair, 1) in chunks and (pair, 0) in chunks:
            on, off = chunk_times(chunks[(pair, 1)], 1), chunk_times(chunks[(pair, 0)], 0)
            differences.append([a - b for a, b in zip(on, off)])
    return [statistics.median(column) for column in zip(*differences)], len(differences)


def summarize(chunks, state):
    """Medians over the chunks of one state: wall, hooked and outside time (us a chunk), and per call name the
    calls a chunk and the ns a call."""
    mine = [chunk for (_, s), chunk in chunks.items() if s == state]
    tag = "on" if state else "off"
    per_name = collections.defaultdict(lambda: ([], []))
    for chunk in mine:
        for (on_off, name), (calls, ns) in chunk["calls"].items():
            if on_off != tag:
                continue  # a call another thread made across the switch
            per_name[name][0].append(calls)
            per_name[name][1].append(ns / calls)
    times = [statistics.median(column) for column in zip(*(chunk_times(chunk, state) for chunk in mine))]
    names = {name: (statistics.median(calls), statistics.median(ns)) for name, (calls, ns) in per_name.items()}
    return len(mine), times, names


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+", help="tallies written under BLOCKRUN_BENCH_CALLS")
    args = parser.parse_args()
    for path in args.files:
        chunks, span_ns = read_chunks(path)
        n_on, times_on, on = summarize(chunks, 1)
        n_off, times_off, off = summarize(chunks, 0)
        paired, pairs = paired_times(chunks)
        print(f"{path}: {n_on} chunks on, {n_off} off, {pairs} pairs (medians, us a chunk)")
        if span_ns is not None:
            print(f"  the timer's own: {span_ns:.0f} ns a span (a driver launch has 2 or 3 spans more when on)")
        print(f"  {'':28} {'on':>10} {'off':>10} {'paired on - off':>16}")
        for what, a, b, d in zip(("wall", "in outermost hooked calls", "outside them"), times_on, times_off, paired):
            print(f"  {what:28} {a:10.1f} {b:10.1f} {d:+16.1f}")
        print(f"  {'call':36} {'calls/chunk':>11} {'ns on':>9} {'ns off':>9} {'added':>8} {'us/chunk':>9}")
        for name in sorted(set(on) | set(off), key=lambda n: -on.get(n, (0, 0))[0] * on.get(n, (0, 0))[1]):
            if name == "outermost hooked calls":
                continue
            calls, ns_on = on.get(name, (0, 0.0))
            if name not in off:  # a span of the shim's own: no call to compare it with
                print(f"  {name[:36]:36} {calls:11.0f} {ns_on:9.0f} {'-':>9} {'-':>8} {calls * ns_on / 1e3:9.1f}")
                continue
            added = ns_on - off[name][1]
            print(f"  {name[:36]:36} {calls:11.0f} {ns_on:9.0f} {off[name][1]:9.0f} {added:+8.0f} "
                  f"{calls * added / 1e3:+9.1f}")

if __name__ == "__main__":
    main()
# SPDX-License-Identifier: MIT
