"""Where the shim's cost lies in a workload, from inside one process: reads the call tallies that a switched run
writes with BLOCKRUN_BENCH_CALLS=FILE (bench/bench_switch.py; the timer is in shim/bench_switch.h) and prints,
for the chunks with the shim on and those switched off:

- the chunk's wall time, the time in outermost hooked calls, and the rest: the time outside every call the shim
  wraps (the program's own work, and CUDA calls the shim does not hook);
- per hook, the calls per chunk and the time per call, on and off, and the difference;
- inside the driver launch wrappers, the real launch call and the breadcrumb (slot, write, note) on their own.

    BLOCKRUN_BENCH_CALLS=/tmp/calls.tsv LD_PRELOAD=build/lib/libcuda_blockrun_bench.so \\
        python3 bench/torch_train.py --chunks 20
    python3 bench/call_times.py /tmp/calls.tsv

Medians over chunks; the timer's own two clock reads a call fall on both states alike.
"""
import argparse
import collections
import statistics


def read_chunks(path):
    """{(pair, state): {"wall": seconds, "calls": {(on_off, name): (calls, ns)}}} from one tallies file."""
    chunks = {}
    with open(path) as lines:
        for line in lines:
            label, on_off, name, calls, ns = line.rstrip("\n").split("\t")
            pair, state, wall = label.split(" ")
            if pair == "warm-up":
                continue
            chunk = chunks.setdefault((pair, int(state)), {"wall": float(wall), "calls": {}})
            chunk["calls"][(on_off, name)] = (int(calls), int(ns))
    return chunks


def summarize(chunks, state):
    """Medians over the chunks of one state: wall and outermost time (us a chunk), and per call name the calls a
    chunk and the ns a call."""
    mine = [chunk for (_, s), chunk in chunks.items() if s == state]
    tag = "on" if state else "off"
    per_name = collections.defaultdict(lambda: ([], []))
    walls, hooked = [], []
    for chunk in mine:
        walls.append(chunk["wall"] * 1e6)
        outermost = chunk["calls"].get((tag, "outermost hooked calls"), (0, 0))
        hooked.append(outermost[1] / 1e3)
        for (on_off, name), (calls, ns) in chunk["calls"].items():
            if on_off != tag:
                continue  # a call another thread made across the switch
            per_name[name][0].append(calls)
            per_name[name][1].append(ns / calls)
    names = {name: (statistics.median(calls), statistics.median(ns)) for name, (calls, ns) in per_name.items()}
    return len(mine), statistics.median(walls), statistics.median(hooked), names


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+", help="tallies written under BLOCKRUN_BENCH_CALLS")
    args = parser.parse_args()
    for path in args.files:
        chunks = read_chunks(path)
        n_on, wall_on, hooked_on, on = summarize(chunks, 1)
        n_off, wall_off, hooked_off, off = summarize(chunks, 0)
        print(f"{path}: {n_on} chunks on, {n_off} off (medians, us a chunk)")
        print(f"  {'':28} {'on':>10} {'off':>10} {'on - off':>10}")
        for what, a, b in (("wall", wall_on, wall_off), ("in outermost hooked calls", hooked_on, hooked_off),
                           ("outside them", wall_on - hooked_on, wall_off - hooked_off)):
            print(f"  {what:28} {a:10.1f} {b:10.1f} {a - b:+10.1f}")
        print(f"  {'call':36} {'calls/chunk':>11} {'ns on':>9} {'ns off':>9} {'added':>8} {'us/chunk':>9}")
        for name in sorted(set(on) | set(off), key=lambda n: -on.get(n, (0, 0))[0] * on.get(n, (0, 0))[1]):
            if name == "outermost hooked calls":
                continue
            calls, ns_on = on.get(name, (0, float("nan")))
            _, ns_off = off.get(name, (0, float("nan")))
            added = ns_on - ns_off
            print(f"  {name[:36]:36} {calls:11.0f} {ns_on:9.0f} {ns_off:9.0f} {added:+8.0f} "
                  f"{calls * added / 1e3:+9.1f}")


if __name__ == "__main__":
    main()
# SPDX-License-Identifier: MIT
