#!/usr/bin/env python3
"""Times N launches made from Python through ctypes on the simulated CUDA stack; prints ns per launch.

Usage: python_capture_cost.py LIBRARY N gil|nogil
  gil:   ctypes.PyDLL, the launching thread holds the GIL (as C extensions that keep it do)
  nogil: ctypes.CDLL, the GIL is released around the call (as PyTorch does around its ops)
Run under the shim with CUDA_BLOCKRUN_CALLSITES=none and =all: the difference is the cost of capturing a
launch's native stack and Python frames from a Python program (bench/run_capture_cost.sh does this).
"""
import ctypes
import sys
import time


def launch_loop(function, count):
    for _ in range(count):
        function()


def main():
    library, count, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    loader = ctypes.PyDLL if mode == "gil" else ctypes.CDLL
    function = loader(library).bench_launch_one
    launch_loop(function, 2000)  # warm-up: the kernel is named, the stream table filled
    start = time.perf_counter_ns()
    launch_loop(function, count)
    print(f"{(time.perf_counter_ns() - start) / count:.1f}")


if __name__ == "__main__":
    main()
# SPDX-License-Identifier: MIT
