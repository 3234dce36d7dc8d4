#!/usr/bin/env python3
"""CI test of the benchmark shim's call timer (shim/bench_switch.h) and bench/call_times.py, on the simulated
CUDA stack: a Python workload launches through the simulated runtime in chunks alternated with the shim on and
switched off (bench/bench_switch.py), with BLOCKRUN_BENCH_CALLS set. Checked: every chunk's tallies count
exactly the calls it made, on or off as the switch was; the driver launch's own spans (record, real call,
breadcrumb) appear only with the shim on, the breadcrumb only with breadcrumbs, told apart by whether it wrote
(every launch; one in 8 with --breadcrumb-every 8); a runtime launch and the driver launch inside it count once as
outermost; and call_times.py reads the file back. Timing is not asserted.

    call_times_test.py BUILD_DIR SCRATCH_DIR   (with LD_LIBRARY_PATH pointing at the simulated libraries)
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LAUNCHES = 48  # a chunk (a multiple of 8, so that one write in 8 is 6 a chunk)
PAIRS = 3

WORKLOAD = f"""
import ctypes, sys
sys.path.insert(0, {HERE!r})
from bench_switch import time_chunks
launch_one = ctypes.CDLL(sys.argv[1]).bench_launch_one
synchronize = ctypes.CDLL("libcudart.so.13").cudaDeviceSynchronize
def chunk():
    for _ in range({LAUNCHES}):
        assert launch_one() == 0
    assert synchronize() == 0
    return 1.0
chunk()  # CUDA's start (the runtime's lookups, the kernel's loading) before the timer
on, off = time_chunks({PAIRS}, chunk)
assert off is not None, "the benchmark shim's switch was not found"
"""


def run(build, scratch, name, extra_env):
    """Runs the workload under the benchmark shim; returns the failures and the tallies' lines."""
    tallies = os.path.join(scratch, f"call-times-{name}.tsv")
    if os.path.exists(tallies):
        os.remove(tallies)
    env = dict(os.environ, LD_PRELOAD=os.path.join(build, "lib", "libcuda_blockrun_bench.so"),
               BLOCKRUN_BENCH_CALLS=tallies, CUDA_BLOCKRUN_SUMMARY="0", **extra_env)
    ran = subprocess.run([sys.executable, "-c", WORKLOAD, os.path.join(build, "bench", "libsim_launch_lib.so")],
                         env=env, capture_output=True, text=True, timeout=120)
    if ran.returncode != 0:
        return [f"{name}: the workload exited {ran.returncode}: {ran.stderr[-2000:]}"], []
    with open(tallies) as file:
        return [], [line.rstrip("\n").split("\t") for line in file]


WRITTEN = "driver launch: the breadcrumb, with a write"
NOT_WRITTEN = "driver launch: the breadcrumb, no write"


def check(name, lines, every):
    """The failures of one run's tallies (`every`: one breadcrumb write in so many launches; 0: none)."""
    failures = []
    chunks = {}
    timer = False
    for label, on_off, call, calls, _ in lines:
        if call.startswith("the timer"):
            timer = True
        pair, state, _ = label.split(" ")
        if pair == "warm-up":
            continue
        if on_off != ("on" if state == "1" else "off"):
            failures.append(f"{name}: {label}: a call tallied {on_off}")
        chunks.setdefault((pair, state), {})[call] = int(calls)
    if not timer:
        failures.append(f"{name}: no line of the timer's own cost")
    if sorted(chunks) != sorted((f"chunk{pair}", state) for pair in range(PAIRS) for state in "01"):
        failures.append(f"{name}: chunks {sorted(chunks)}")
    spans = {"driver launch: the record": LAUNCHES, "driver launch: the real call": LAUNCHES}
    if every:
        spans[WRITTEN] = LAUNCHES // every
    if every > 1:
        spans[NOT_WRITTEN] = LAUNCHES - LAUNCHES // every
    for (pair, state), calls in sorted(chunks.items()):
        expected = {"__cudaLaunchKernel": LAUNCHES, "cuLaunchKernel": LAUNCHES, "cudaDeviceSynchronize": 1,
                    "outermost hooked calls": LAUNCHES + 1}
        if state == "1":
            expected.update(spans)
        for call, count in expected.items():
            if calls.get(call) != count:
                failures.append(f"{name}: {pair} {state}: {call} tallied {calls.get(call)} times, not {count}")
        unexpected = {WRITTEN, NOT_WRITTEN} - set(expected)
        if unexpected & set(calls):
            failures.append(f"{name}: {pair} {state}: {sorted(unexpected & set(calls))} tallied")
    return failures


def main():
    build, scratch = sys.argv[1], sys.argv[2]
    os.makedirs(scratch, exist_ok=True)
    failures = []
    for name, extra_env, every in (("quiet", {}, 0),
                                   ("breadcrumbs", {"CUDA_BLOCKRUN_BREADCRUMBS": "1"}, 1),
                                   ("every-8", {"CUDA_BLOCKRUN_BREADCRUMBS": "1",
                                                "CUDA_BLOCKRUN_BREADCRUMB_EVERY": "8"}, 8)):
        problems, lines = run(build, scratch, name, extra_env)
        failures += problems or check(name, lines, every)
        if problems:
            continue
        read = subprocess.run([sys.executable, os.path.join(HERE, "call_times.py"),
                               os.path.join(scratch, f"call-times-{name}.tsv")],
                              capture_output=True, text=True, timeout=60)
        if read.returncode != 0 or f"{PAIRS} pairs" not in read.stdout or "cuLaunchKernel" not in read.stdout:
            failures.append(f"{name}: call_times.py exited {read.returncode}: {read.stdout[-1000:]}"
                            f"{read.stderr[-1000:]}")
    for failure in failures:
        print("FAILED:", failure)
    print("call times:", "FAILED" if failures else "passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
# SPDX-License-Identifier: MIT
