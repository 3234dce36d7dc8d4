"""The in-process comparison of bench/harness.py's `*_switched` configurations, for the PyTorch workloads.

From one process to the next the H200 machine's training loops move by up to 25%, more than the shim costs, so
runs of different processes cannot resolve a few percent. With libcuda_blockrun_bench.so preloaded (the shim
with a switch: shim/shim.cpp, CUDA_BLOCKRUN_BENCH_SWITCH) a workload times its chunks with the shim switched on
and off in alternation inside one process, and prints what the shim costs against itself switched off: a
ratio per pair of neighbouring chunks, the median over the pairs. Switched off, every wrapper forwards at once
(a few nanoseconds a call: the process is as near native as a preloaded shim can make it).

    on, off = time_chunks(chunks, timed)  # timed(): runs one chunk, synchronized; returns its time
    print_switched("train_step", "ms", 1e3, on, off)  # nothing without the benchmark shim (off is None)

With BLOCKRUN_BENCH_CALLS=FILE in the environment the shim also times every hooked call, and after each chunk
appends the tallies (calls and time per hook, on or off) to FILE: bench/call_times.py FILE tells from them where
the shim's cost lies, in which calls or outside all of them. The timer adds two clock reads to every hooked call,
on and off alike: leave it unset when the ratio is what is measured.
"""
import ctypes
import os
import statistics
import time


def find_export(name, restype, *argtypes):
    """The benchmark shim's export `name`, typed, or None where it is not preloaded."""
    try:
        function = getattr(ctypes.CDLL(None), name)
    except AttributeError:
        return None
    function.argtypes = list(argtypes)
    function.restype = restype
    return function


def find_switch():
    """The benchmark shim's switch (one int argument: 1 on, 0 off), or None where it is not preloaded."""
    return find_export("cuda_blockrun_bench_switch", None, ctypes.c_int)


def find_call_tallies():
    """With BLOCKRUN_BENCH_CALLS=FILE and the benchmark shim: the call timer turned on, and a function
    `tallies(label)` that appends the hooked calls' tallies since its last call to FILE, each line headed by
    `label`. None otherwise."""
    path = os.environ.get("BLOCKRUN_BENCH_CALLS")
    if not path:
        return None
    time_calls = find_export("cuda_blockrun_bench_time_calls", None, ctypes.c_int)
    report = find_export("cuda_blockrun_bench_calls", ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p)
    if not time_calls or not report:
        return None
    time_calls(1)

    def tallies(label):
        if report(path.encode(), label.encode()) != 0:
            raise OSError(f"BLOCKRUN_BENCH_CALLS: cannot append to {path}")

    return tallies


def alternate(switch, pairs, timed):
    """Runs `pairs` pairs of chunks, one with the shim on and one off, in the order on-off then off-on (a drift
    within the run falls on both alike); leaves the shim on. Returns the chunks' times, on and off, pair by
    pair. With BLOCKRUN_BENCH_CALLS each chunk's call tallies go to that file, labelled with the chunk's pair,
    state and wall time in seconds."""
    on, off = [], []
    tallies = find_call_tallies()
    if tallies:
        tallies("warm-up 0 0")  # what ran before the first chunk: not a chunk's
    for pair in range(pairs):
        for state in ((1, 0) if pair % 2 == 0 else (0, 1)):
            switch(state)
            start = time.perf_counter()
            (on if state else off).append(timed())
            if tallies:
                tallies(f"chunk{pair} {state} {time.perf_counter() - start:.9f}")
    switch(1)
    return on, off


def time_chunks(chunks, timed):
    """`chunks` chunks timed by `timed()`, and under the benchmark shim as many again with it switched off, in
    alternation (`alternate`). Returns the times with the shim as loaded, and those switched off (None without
    the benchmark shim)."""
    switch = find_switch()
    if not switch:
        return [timed() for _ in range(chunks)], None
    return alternate(switch, chunks, timed)


def print_switched(metric, unit, scale, on, off):
    """BENCH lines of a switched run: `<metric>_off`, the median chunk with the shim off (times `scale`, in
    `unit`), and `<metric>_switched_ratio`, the median over pairs of on over off. Nothing where `off` is None (no
    benchmark shim)."""
    if off is None:
        return
    ratios = [a / b for a, b in zip(on, off)]
    print(f"BENCH {metric}_off {statistics.median(off) * scale:.5f} {unit}", flush=True)
    print(f"BENCH {metric}_switched_ratio {statistics.median(ratios):.5f} x", flush=True)
# SPDX-License-Identifier: MIT
