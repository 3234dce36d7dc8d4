# GPU case: a PyTorch program that catches its CUDA error and exits 0, as training scripts that log an exception
# and carry on do; only --error-exitcode makes the job fail.
import sys

import torch

x = torch.randn(1000, device="cuda")
index = torch.tensor([5, 2000], device="cuda")  # the bug: 2000 is out of range
try:
    print("total", torch.index_select(x, 0, index).sum().item())
except Exception as error:  # noqa: BLE001 - the point of the case
    print("caught:", str(error).splitlines()[0])
sys.exit(0)
# SPDX-License-Identifier: MIT
