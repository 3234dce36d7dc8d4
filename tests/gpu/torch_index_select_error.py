# GPU case: an out-of-range index through torch.index_select called in a function; PyTorch's binding releases
# the GIL before dispatching to the CUDA kernel, so the Python lines (the function's, then its caller's) are
# read from the launching thread's own frames without the GIL.
import torch


def pick(x, index):
    return torch.index_select(x, 0, index)  # CALLSITE_INDEX_SELECT


x = torch.randn(1000, device="cuda")
y = torch.ones(1000, device="cuda") * 2
index = torch.tensor([5, 2000], device="cuda")  # the bug: 2000 is out of range
picked = pick(x, index)
print("total", (picked * 3).sum().item())
# SPDX-License-Identifier: MIT
