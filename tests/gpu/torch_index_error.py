# GPU case: PyTorch indexing with an out-of-range index, a device-side assert (cudaErrorAssert) in
# the indexing kernel. Without help the Python traceback points at a later line; under
# `cuda-blockrun --block all` the shim names the indexing kernel at its launch.
import torch

x = torch.randn(1000, device="cuda")
y = torch.ones(1000, device="cuda") * 2  # a few unrelated kernels first
index = torch.tensor([5, 2000], device="cuda")  # the bug: 2000 is out of range
picked = x[index]  # CALLSITE_INDEX
total = (picked * 3).sum()
print("total", total.item())
# SPDX-License-Identifier: MIT
