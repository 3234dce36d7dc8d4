# Session 31: where the MLP step's breadcrumb cost goes, by phase, in one process (benchmark shim switched).
import ctypes, statistics, sys, time
import torch
sys.path.insert(0, "bench")  # run from the repository root: bench/bench_switch.py
from bench_switch import find_switch

switch = find_switch()
torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Linear(256, 512), torch.nn.LayerNorm(512), torch.nn.ReLU(),
    torch.nn.Linear(512, 512), torch.nn.LayerNorm(512), torch.nn.ReLU(),
    torch.nn.Linear(512, 10),
).cuda()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
inputs = torch.randn(64, 256, device="cuda")
targets = torch.randint(0, 10, (64,), device="cuda")
PHASES = ("zero_grad", "forward", "backward", "step")

def step(times):
    t0 = time.perf_counter(); optimizer.zero_grad()
    t1 = time.perf_counter(); loss = torch.nn.functional.cross_entropy(model(inputs), targets)
    t2 = time.perf_counter(); loss.backward()
    t3 = time.perf_counter(); optimizer.step()
    t4 = time.perf_counter()
    for name, a, b in zip(PHASES, (t0, t1, t2, t3), (t1, t2, t3, t4)):
        times[name] += b - a

for _ in range(50):
    step({p: 0.0 for p in PHASES})
torch.cuda.synchronize()

def chunk(steps=50):
    times = {p: 0.0 for p in PHASES}
    start_event, end_event = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start = time.perf_counter(); start_event.record()
    for _ in range(steps):
        step(times)
    end_event.record(); host_enqueued = time.perf_counter()
    torch.cuda.synchronize(); stop = time.perf_counter()
    return {**{p: v / steps * 1e6 for p, v in times.items()}, "total": (stop - start) / steps * 1e6,
            "drain": (stop - host_enqueued) / steps * 1e6, "gpu": start_event.elapsed_time(end_event) * 1e3 / steps}

on, off = [], []
for pair in range(12):
    for state in ((1, 0) if pair % 2 == 0 else (0, 1)):
        if switch: switch(state)
        (on if state else off).append(chunk())
if switch: switch(1)
keys = PHASES + ("total", "drain", "gpu")
print("us a step, median over 12 chunks: phase  on  off  (on-off)")
for k in keys:
    a = statistics.median(c[k] for c in on); b = statistics.median(c[k] for c in off)
    print(f"  {k:10s} {a:8.1f} {b:8.1f} {a - b:+7.1f}")
# SPDX-License-Identifier: MIT
