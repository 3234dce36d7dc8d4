#!/usr/bin/env python3
"""The cost of a launch's Python line (what --breadcrumbs keeps for every launch) where the shim's cache of
lines is cold, as in a training loop, on the simulated CUDA stack (no GPU needed).

In a PyTorch training loop the interpreter and the framework touch megabytes between two launches, so the
shim's site cache and the frames it compares are out of the CPU's caches at each launch; a tight loop from one
line measures the warm cost instead (bench/python_capture_cost.py). This workload launches the way PyTorch code
does: from many lines of a program, each through a stack of library frames (a module's __call__, _call_impl,
forward, a functional op; files under site-packages, so the shim's choice looks past them), and between two
launches copies EVICT_MIB of memory, which pushes the cache's lines out. The launch's "record" span (the engine's
record and the Python line) is timed by the benchmark shim's call timer (shim/bench_switch.h); run it with
CUDA_BLOCKRUN_CALLSITES=none and without: the difference is the Python line.

    BLOCKRUN_BENCH_CALLS=FILE LD_PRELOAD=build/lib/libcuda_blockrun_bench.so CUDA_BLOCKRUN_BREADCRUMBS=1 \\
        LD_LIBRARY_PATH=build/sim/lib python3 bench/python_line_cost.py build/bench/libsim_launch_lib.so \\
        [--sites 24] [--steps 100] [--evict-mib 16]

Prints `BENCH record_span_ns <median over steps of the record's ns a launch>`.
"""
import argparse
import ctypes
import os
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_switch import find_call_tallies  # noqa: E402
from call_times import read_chunks  # noqa: E402

# A library in the manner of torch.nn: a module's call goes through __call__ and _call_impl to forward, which
# calls a functional op, which calls into C.
LIBRARY = '''
_launch = None  # the launch itself (C: no frame of its own)
_between = None  # the work between two launches (returns before the launch)


def op(x):
    _between()
    if _launch() != 0:
        raise RuntimeError("bench_launch_one failed")
    return x


class Module:
    def __call__(self, *args):
        return self._call_impl(*args)

    def _call_impl(self, *args):
        return self.forward(*args)


class Op(Module):
    def forward(self, x):
        return op(x)
'''


def program(sites):
    """A program's model: `sites` layers, each called from a line of its own in forward."""
    lines = ["from fakenn import Module, Op", "", "", "class Net(Module):", "    def __init__(self):"]
    lines += [f"        self.layer{i} = Op()" for i in range(sites)]
    lines += ["", "    def forward(self, x):"]
    lines += [f"        x = self.layer{i}(x)" for i in range(sites)]
    lines += ["        return x", "", "", "def step(net, x):", "    return net(x)", ""]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("library", help="the simulated launch library (build/bench/libsim_launch_lib.so)")
    parser.add_argument("--sites", type=int, default=24, help="launch lines in the program")
    parser.add_argument("--steps", type=int, default=100, help="steps timed (each launches from every line)")
    parser.add_argument("--evict-mib", type=float, default=16, help="memory copied between two launches")
    args = parser.parse_args()
    tallies = find_call_tallies()
    if not tallies:
        sys.exit("python_line_cost.py: needs the benchmark shim preloaded and BLOCKRUN_BENCH_CALLS=FILE")
    root = tempfile.mkdtemp(prefix="python-line-cost-")
    os.makedirs(os.path.join(root, "site-packages"))
    with open(os.path.join(root, "site-packages", "fakenn.py"), "w") as file:
        file.write(LIBRARY)
    with open(os.path.join(root, "model.py"), "w") as file:
        file.write(program(args.sites))
    sys.path[:0] = [root, os.path.join(root, "site-packages")]
    import fakenn
    import model

    launch_one = ctypes.CDLL(args.library).bench_launch_one
    size = int(args.evict_mib * (1 << 20))
    source, target = bytearray(size), bytearray(size)

    def between():
        if size:
            target[:] = source  # the memory a framework's work between two launches touches

    fakenn._launch, fakenn._between = launch_one, between
    net = model.Net()
    for _ in range(3):  # the kernel named, every line's walk remembered
        model.step(net, 0)
    path = os.environ["BLOCKRUN_BENCH_CALLS"]
    open(path, "w").close()  # this run's tallies only
    tallies("warmup 1 0")  # a chunk of its own (call_times.read_chunks skips "warm-up" labels)
    for number in range(args.steps):
        model.step(net, 0)
        tallies(f"step{number} 1 0")
    chunks, _ = read_chunks(path)
    warm_up = chunks.pop(("warmup", 1))["calls"]
    per_launch = [ns / calls for calls, ns in
                  (chunk["calls"][("on", "driver launch: the record")] for chunk in chunks.values())]
    read_in_full = sum(chunk["calls"].get(("on", "python line: read in full"), (0, 0))[0]
                       for chunk in chunks.values())
    keyed = sum(("on", "python line: keyed by instruction pointers") in chunk["calls"] for chunk in chunks.values())
    print(f"BENCH record_span_ns {statistics.median(per_launch):.1f} ns "
          f"(steps {len(per_launch)}, launches a step {args.sites}, evict {args.evict_mib:g} MiB; lines read in "
          f"full: {warm_up.get(('on', 'python line: read in full'), (0, 0))[0]} in the warm-up, "
          f"{read_in_full} timed; keyed by instruction pointers: {keyed}/{len(per_launch)} steps)")


if __name__ == "__main__":
    main()
# SPDX-License-Identifier: MIT
