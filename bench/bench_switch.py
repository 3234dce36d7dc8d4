"""The in-process comparison of bench/harness.py's `*_switched` configurations, for the PyTorch workloads.

From one process to the next the H200 machine's training loops move by up to 25%, more than the shim costs, so
runs of different processes cannot resolve a few percent. With libcuda_blockrun_bench.so preloaded (the shim
with a switch: shim/shim.cpp, CUDA_BLOCKRUN_BENCH_SWITCH) a workload times its chunks with the shim switched on
and off in alternation inside one process, and prints what the shim costs against itself switched off: a
ratio per pair of neighbouring chunks, the median over the pairs. Switched off, every wrapper forwards at once
(a few nanoseconds a call: the process is as near native as a preloaded shim can make it).

    on, off = time_chunks(chunks, timed)  # timed(): runs one chunk, synchronized; returns its time
    print_switched("train_step", "ms", 1e3, on, off)  # nothing without the benchmark shim (off is None)
"""
import ctypes
import statistics


def find_switch():
    """The benchmark shim's switch (one int argument: 1 on, 0 off), or None where it is not preloaded."""
    try:
        switch = ctypes.CDLL(None).cuda_blockrun_bench_switch
    except AttributeError:
        return None
    switch.argtypes = [ctypes.c_int]
    switch.restype = None
    return switch


def alternate(switch, pairs, timed):
    """Runs `pairs` pairs of chunks, one with the shim on and one off, in the order on-off then off-on (a drift
    within the run falls on both alike); leaves the shim on. Returns the chunks' times, on and off, pair by
    pair."""
    on, off = [], []
    for pair in range(pairs):
        for state in ((1, 0) if pair % 2 == 0 else (0, 1)):
            switch(state)
            (on if state else off).append(timed())
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
