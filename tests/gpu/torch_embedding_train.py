# GPU case (issue 16, tests/gpu/attribution_case.sh): a small training loop (nn.Embedding + Linear,
# cross-entropy, backward, AdamW) whose batch at step FAULT_STEP (30 of 40) holds a token id far past the
# embedding table.
#
# The pattern of real programs: a data bug (a token id from another vocabulary) that makes the embedding's
# lookup kernel fail in the middle of training. The lookup (PyTorch 2.11: vectorized_gather_kernel, with a
# CUDA_KERNEL_ASSERT on the index; older versions indexSelect*Index) fails its device-side assert
# (cudaErrorAssert, 710; the id, 10**9 rows past a 1000-row table, is also unmapped memory should the assert be
# compiled out: an illegal address then); its error surfaces at the launch check of a later op (the Linear's
# GEMM, the loss, backward, the optimizer), or at the loss.item() of that step, never at the lookup's own
# line. The forward line that calls the embedding carries the marker comment the case greps for (never a
# hard-coded line number); it is the program's own frame under nn.Module's __call__.
#   python3 torch_embedding_train.py       (GPU_CASE_RAISE=1: the error is raised on, uncaught, after its line)
import os
import sys
import traceback

import torch

if not torch.cuda.is_available():
    print("SKIPPED: PyTorch sees no CUDA device")
    sys.exit(77)

VOCABULARY, WIDTH, CLASSES, BATCH = 1000, 64, 10, 64
STEPS, FAULT_STEP = 40, 30
BAD_TOKEN = 10**9  # far past the table


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCABULARY, WIDTH)
        self.head = torch.nn.Linear(WIDTH, CLASSES)

    def forward(self, tokens):
        hidden = self.embed(tokens)  # FAULT_LINE
        return self.head(torch.relu(hidden))


def describe(error):
    """Where in this file the error surfaced (innermost line of this file), and its message's first line."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == __file__]
    where = f"line {frames[-1].lineno} ({frames[-1].line.strip()})" if frames else "an unknown line"
    lines = str(error).splitlines()
    return f"{type(error).__name__} surfaced at {where}: {lines[0] if lines else ''}"


torch.manual_seed(0)
model = Model().cuda()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
tokens = torch.randint(0, VOCABULARY, (BATCH,), device="cuda")
targets = torch.randint(0, CLASSES, (BATCH,), device="cuda")
bad_tokens = tokens.clone()
bad_tokens[7] = BAD_TOKEN  # the bug (made now, so that the faulting step launches nothing extra)
torch.cuda.synchronize()

for step in range(1, STEPS + 1):
    try:
        if step == FAULT_STEP:
            print(f"torch_embedding_train: FAULT step={step}: token id {BAD_TOKEN} in a table of {VOCABULARY}",
                  flush=True)
        optimizer.zero_grad(set_to_none=True)
        batch = bad_tokens if step == FAULT_STEP else tokens
        logits = model(batch)
        loss = torch.nn.functional.cross_entropy(logits, targets)
        loss.backward()
        optimizer.step()
        if step % 10 == 0:
            print(f"torch_embedding_train: step {step} loss {loss.item():.4f}", flush=True)
    except RuntimeError as error:
        print(f"torch_embedding_train: in step {step}: {describe(error)}", flush=True)
        if os.environ.get("GPU_CASE_RAISE") == "1":
            raise  # an unmodified training script's end: the traceback (tests/gpu/python_door_case.sh)
        sys.exit(1)
torch.cuda.synchronize()
print(f"torch_embedding_train: UNEXPECTED: {STEPS} steps without an error", flush=True)
sys.exit(0)
# SPDX-License-Identifier: MIT
