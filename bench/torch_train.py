# Benchmark workload: a launch-bound PyTorch training loop, a small MLP with LayerNorm trained with
# AdamW at batch 64 (about 46 kernel launches a step, each tiny: the host's launch path is the cost).
# Fixed seed and inputs; a warm-up of 50 steps, then a fixed number of steps timed on the host until the
# GPU finished them (synchronized), in 10 chunks: the figure is the median chunk's time per step, so a stall
# of the machine in one chunk does not move it. The loss is read once at the end.
#   python3 torch_train.py [--scale S] [--chunks N]   (S multiplies the timed steps: a shortened run for slow
#   tools; N: chunks, 10)
# Prints "BENCH train_step <milliseconds per step> ms" for bench/harness.py, and "BENCH train_step_min" of the
# fastest chunk: the loop when nothing else on the machine got in the way (issue 21's comparisons). Under the
# benchmark shim (bench/bench_switch.py) it runs as many chunks again with the shim switched off, in alternation,
# and prints "BENCH train_step_switched_ratio" too.
import argparse
import statistics
import time

import torch

from bench_switch import print_switched, time_chunks


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--chunks", type=int, default=10, help="timed chunks (the median and fastest are printed)")
    args = parser.parse_args()
    chunks = args.chunks
    steps = max(1, int(100 * args.scale))  # per chunk
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(256, 512), torch.nn.LayerNorm(512), torch.nn.ReLU(),
        torch.nn.Linear(512, 512), torch.nn.LayerNorm(512), torch.nn.ReLU(),
        torch.nn.Linear(512, 10),
    ).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    inputs = torch.randn(64, 256, device="cuda")
    targets = torch.randint(0, 10, (64,), device="cuda")

    def step():
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(inputs), targets)
        loss.backward()
        optimizer.step()
        return loss

    for _ in range(50):
        step()
    torch.cuda.synchronize()
    loss = None

    def timed_chunk():
        nonlocal loss
        start = time.perf_counter()
        for _ in range(steps):
            loss = step()
        torch.cuda.synchronize()
        return (time.perf_counter() - start) / steps

    per_step, off = time_chunks(chunks, timed_chunk)  # off: under the benchmark shim only
    print(f"BENCH train_step {statistics.median(per_step) * 1e3:.5f} ms", flush=True)
    print(f"BENCH train_step_min {min(per_step) * 1e3:.5f} ms", flush=True)
    print_switched("train_step", "ms", 1e3, per_step, off)
    print(f"final loss {loss.item():.6f}", flush=True)


if __name__ == "__main__":
    main()
# SPDX-License-Identifier: MIT
