# GPU case and benchmark workload: a launch-bound training loop (embedding + MLP with LayerNorm, AdamW,
# batch 64) whose step FAULT_STEP (default 500 of 600) feeds an out-of-range token id: a device-side
# assert in the embedding's index-select kernel. The script reports the Python line where the error was
# raised and the median step time of the steps before the fault.
#   python3 torch_late_fault.py [steps] [fault_step]
import statistics
import sys
import time
import traceback

import torch

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 600
fault_step = int(sys.argv[2]) if len(sys.argv) > 2 else 500
torch.manual_seed(0)
vocabulary, width = 1000, 256


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(vocabulary, width)
        self.body = torch.nn.Sequential(
            torch.nn.Linear(width, 512), torch.nn.LayerNorm(512), torch.nn.ReLU(),
            torch.nn.Linear(512, 512), torch.nn.LayerNorm(512), torch.nn.ReLU(),
            torch.nn.Linear(512, 10))

    def forward(self, tokens):
        return self.body(self.embed(tokens))  # LINE_EMBED


model = Model().cuda()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
tokens = torch.randint(0, vocabulary, (64,), device="cuda")
targets = torch.randint(0, 10, (64,), device="cuda")
bad_tokens = tokens.clone()
bad_tokens[7] = vocabulary + 5  # the bug: one id past the table

times = []
for step in range(1, steps + 1):
    start = time.perf_counter()
    try:
        optimizer.zero_grad()
        batch = bad_tokens if step == fault_step else tokens
        logits = model(batch)  # LINE_FORWARD
        loss = torch.nn.functional.cross_entropy(logits, targets)
        loss.backward()  # LINE_BACKWARD
        optimizer.step()
        if step % 100 == 0:
            print(f"step {step} loss {loss.item():.4f}")  # LINE_ITEM
        torch.cuda.synchronize()
    except Exception as error:  # noqa: BLE001 - report where it surfaced, then stop
        frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == __file__]
        line = frames[-1] if frames else None
        marker = line.line.split("# ")[-1] if line and "# LINE_" in line.line else "?"
        print(f"fault surfaced in step {step} at line {line.lineno if line else '?'} ({marker}): "
              f"{type(error).__name__}")
        break
    if 100 <= step < fault_step:
        times.append(time.perf_counter() - start)
if times:
    print(f"median step time before the fault: {statistics.median(times) * 1e3:.3f} ms over {len(times)} steps")
# SPDX-License-Identifier: MIT
