# GPU case and benchmark workload (issue 10): a 2-rank PyTorch DDP training loop, run under torchrun, one
# process per GPU (device = LOCAL_RANK), NCCL backend. The model is a small Linear/ReLU MLP over dense
# features plus an nn.Embedding lookup (a learned per-token bias on the logits), trained with AdamW on a fixed
# batch per rank, with fixed seeds: small enough that a step is bound by its kernel launches.
#
# At step K (--fault-step) on rank R (--fault-rank) only, one token id of the batch is far past the embedding
# table, so the embedding's gather kernel (PyTorch's index-select path: vectorized_gather_kernel in PyTorch
# 2.11, indexSelect*Index elsewhere) fails its device-side bounds assert. The lookup is the one line of this
# file whose comment is the marker "FAULT LINE" (the GPU case finds its number with grep). Rank R prints
# `FAULT rank=R step=K` just before that step; its loss is read right after the forward pass, so the error
# surfaces there, a few launches after the faulting one and before the step's allreduce is enqueued, while
# rank 0 goes on into the step's allreduce and waits there for a peer that never comes: the classic
# one-rank-fails, the-others-hang job. Every rank prints `RANK <r> step <i> loss <x>` every 10 steps and at K.
#
#   torchrun --standalone --nproc-per-node 2 ddp_fault.py [--steps N] [--fault-step K] [--fault-rank R]
#   torchrun --standalone --nproc-per-node 2 ddp_fault.py --bench --fault-step -1 [--steps N] [--warmup W]
#
# --bench times the loop instead (no fault): W warm-up steps (default 30), then N steps (default 200) in 10
# chunks, each timed on the host between torch.cuda.synchronize() calls; rank 0 prints
# `BENCH ddp_step_ms <median over chunks of the milliseconds per step>` (bench/run_ddp.sh).
#
# The job cannot hang forever: the process group's timeout is 60 s (the NCCL watchdog then aborts a rank stuck
# in a collective), TORCH_NCCL_ASYNC_ERROR_HANDLING=1 makes the watchdog take that process down, torchrun
# stops the other workers as soon as one fails, and a rank whose step raised gets 30 s to exit before SIGALRM
# ends it (tearing down a communicator in a failed CUDA context can hang inside PyTorch).
import argparse
import datetime
import os
import signal
import statistics
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

VOCABULARY, FEATURES, HIDDEN, CLASSES, BATCH = 1000, 256, 512, 16, 64
BAD_TOKEN = VOCABULARY + 1_000_000  # far past the table: an out-of-range read if the bounds assert is compiled out
PROGRESS_EVERY = 10  # steps between progress lines (each reads the loss: a synchronization)
TIMEOUT = datetime.timedelta(seconds=60)  # the process group's: a collective stuck this long is aborted
EXIT_GRACE_S = 30  # after a step raised: how long this process may take to exit before SIGALRM ends it


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(
            torch.nn.Linear(FEATURES, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, CLASSES))
        self.embed = torch.nn.Embedding(VOCABULARY, CLASSES)

    def forward(self, features, tokens):
        logits = self.body(features)
        # Last in the forward pass, so that few launches (the add and the loss) follow the lookup before the
        # loss is read: the host's view without breadcrumbs keeps the last 8 launches of a stream.
        bias = self.embed(tokens)  # FAULT LINE
        return logits + bias


def say(text):
    # Flushed at once: torchrun's workers write to a pipe or a file, and a worker that is killed loses what
    # it buffered.
    print(text, flush=True)


def parse_arguments():
    parser = argparse.ArgumentParser(prog="ddp_fault.py")
    parser.add_argument("--steps", type=int, default=None,
                        help="training steps (default 60); with --bench, timed steps (default 200)")
    parser.add_argument("--fault-step", type=int, default=40, help="the step (from 1) that faults; -1: none")
    parser.add_argument("--fault-rank", type=int, default=1, help="the rank that faults")
    parser.add_argument("--bench", action="store_true", help="time the steps instead (needs --fault-step -1)")
    parser.add_argument("--warmup", type=int, default=30, help="with --bench: untimed steps first")
    args = parser.parse_args()
    if args.steps is None:
        args.steps = 200 if args.bench else 60
    if args.bench and args.fault_step >= 0:
        parser.error("--bench times a job without a fault: give --fault-step -1")
    if args.fault_step >= 0 and not 1 <= args.fault_step <= args.steps:
        parser.error(f"--fault-step {args.fault_step} is not one of the {args.steps} steps (1-{args.steps})")
    if args.steps < 1 or args.warmup < 0:
        parser.error("--steps must be at least 1 and --warmup at least 0")
    return args


def main():
    args = parse_arguments()
    if "RANK" not in os.environ or "LOCAL_RANK" not in os.environ:
        sys.exit("ddp_fault.py: run it under torchrun (RANK and LOCAL_RANK are not set)")
    rank, local_rank = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    # Read by ProcessGroupNCCL when the group is made: on an error or a timeout its watchdog aborts the
    # communicator and takes the process down, rather than leaving it blocked.
    os.environ.setdefault("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1")
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    dist.init_process_group("nccl", timeout=TIMEOUT)
    world = dist.get_world_size()
    if args.fault_step >= 0 and not 0 <= args.fault_rank < world:
        sys.exit(f"ddp_fault.py: --fault-rank {args.fault_rank} is not a rank of this job (0-{world - 1})")
    say(f"RANK {rank} pid {os.getpid()} device {device} world {world}")

    torch.manual_seed(0)  # the same initial model everywhere (DDP broadcasts rank 0's anyway)
    model = DistributedDataParallel(Model().to(device), device_ids=[local_rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    # A fixed batch per rank, made on the CPU from a per-rank seed: the same data on every run.
    data = torch.Generator().manual_seed(1 + rank)
    features = torch.randn(BATCH, FEATURES, generator=data).to(device)
    tokens = torch.randint(0, VOCABULARY, (BATCH,), generator=data).to(device)
    targets = torch.randint(0, CLASSES, (BATCH,), generator=data).to(device)
    bad_tokens = tokens.clone()
    bad_tokens[7] = BAD_TOKEN  # the bug: one id past the table (made now, so the faulting step adds no launch)

    def train_step(batch_tokens, report_step=None):
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(features, batch_tokens), targets)
        if report_step is not None:
            # Reading the loss waits for the forward pass: a fault in it surfaces here, before backward.
            say(f"RANK {rank} step {report_step} loss {loss.item():.4f}")
        loss.backward()  # DDP allreduces the gradients in here
        optimizer.step()
        return loss

    if args.bench:
        for _ in range(args.warmup):
            train_step(tokens)
        torch.cuda.synchronize()
        chunks = 10
        per_chunk = max(1, args.steps // chunks)
        chunk_ms = []
        for chunk in range(chunks):
            torch.cuda.synchronize()
            start = time.perf_counter()
            for _ in range(per_chunk):
                train_step(tokens)
            torch.cuda.synchronize()
            chunk_ms.append((time.perf_counter() - start) * 1e3 / per_chunk)
            say(f"RANK {rank} step {args.warmup + (chunk + 1) * per_chunk} chunk {chunk_ms[-1]:.4f} ms/step")
        if rank == 0:
            say(f"BENCH ddp_step_ms {statistics.median(chunk_ms):.4f}")
    else:
        for step in range(1, args.steps + 1):
            faulting = step == args.fault_step and rank == args.fault_rank
            if faulting:
                say(f"FAULT rank={rank} step={step}")
            report = step % PROGRESS_EVERY == 0 or step == args.fault_step
            train_step(bad_tokens if faulting else tokens, step if report else None)
        torch.cuda.synchronize()
        say(f"RANK {rank} done after {args.steps} steps")
    dist.destroy_process_group()


if __name__ == "__main__":
    try:
        main()
    except BaseException:
        # The error propagates as it would in any training script (traceback, exit status 1), but the exit
        # may hang in PyTorch's teardown of a communicator whose CUDA context failed: SIGALRM's default action
        # ends the process if it is still there after the grace period (Python installs no handler for it).
        signal.alarm(EXIT_GRACE_S)
        raise
# SPDX-License-Identifier: MIT
