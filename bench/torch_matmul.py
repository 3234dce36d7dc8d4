# Benchmark workload: float32 torch.matmul of square matrices at 1024, 2048 and 4096 (the sizes quoted
# for CUDA_LAUNCH_BLOCKING's overhead). For each size: fixed inputs, a warm-up (cuBLAS heuristics,
# module loads, the shim's first sight of each kernel), then a fixed number of products into a
# preallocated output, timed on the host until the GPU finished them (synchronized), in 5 chunks: the
# figure is the median chunk's time per product.
#   python3 torch_matmul.py [--scale S]   (S multiplies the counts: a shortened run for slow tools)
# Prints "BENCH matmul_<size> <milliseconds per product> ms" for bench/harness.py.
import argparse
import statistics
import time

import torch

COUNTS = {1024: 4000, 2048: 1000, 4096: 150}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=float, default=1.0)
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False  # true float32 GEMMs, the same in every run
    for size, count in COUNTS.items():
        count = max(1, int(count * args.scale / 5))  # per chunk
        generator = torch.Generator(device="cuda").manual_seed(size)
        a = torch.randn(size, size, device="cuda", generator=generator)
        b = torch.randn(size, size, device="cuda", generator=generator)
        c = torch.empty(size, size, device="cuda")
        for _ in range(10):
            torch.matmul(a, b, out=c)
        torch.cuda.synchronize()
        per_product = []
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(count):
                torch.matmul(a, b, out=c)
            torch.cuda.synchronize()
            per_product.append((time.perf_counter() - start) / count)
        print(f"BENCH matmul_{size} {statistics.median(per_product) * 1e3:.5f} ms", flush=True)


if __name__ == "__main__":
    main()
# SPDX-License-Identifier: MIT
