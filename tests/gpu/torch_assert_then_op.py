# GPU case (issue 16, tests/gpu/attribution_case.sh): one PyTorch op whose kernel fails a device-side assert,
# followed at once by other ops, then torch.cuda.synchronize().
#
# The pattern of real programs: a lookup with an index that is out of range (a bad token id, a bad label) and
# the next lines of the model. PyTorch checks every launch with cudaGetLastError, so once the indexing kernel
# has failed, the sticky error is returned by the NEXT op's launch (here the .sum(), or the torch.mm): the
# Python traceback points at that line, and a tool that trusts "the launch that returned the error" names the
# wrong kernel (issue 16). The faulting op is `x[index]` (advanced indexing on CUDA: PyTorch 2.11 launches
# at::native::index_elementwise_kernel, whose bounds check is a CUDA_KERNEL_ASSERT: cudaErrorAssert, 710;
# the same op as torch_index_error.py, seen to assert on the H200). The line that launches it carries the
# marker comment the case greps for (never a hard-coded line number).
import sys
import traceback

import torch

if not torch.cuda.is_available():
    print("SKIPPED: PyTorch sees no CUDA device")
    sys.exit(77)


def describe(error):
    """Where in this file the error surfaced, and the first line of its message."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == __file__]
    where = f"line {frames[-1].lineno} ({frames[-1].line.strip()})" if frames else "an unknown line"
    lines = str(error).splitlines()
    return f"{type(error).__name__} surfaced at {where}: {lines[0] if lines else ''}"


torch.manual_seed(0)
x = torch.randn(1000, device="cuda")
a = torch.randn(256, 256, device="cuda")
b = torch.randn(256, 256, device="cuda")
index = torch.tensor([5, 17, 2000], device="cuda")  # the bug: 2000 is past the 1000 elements of x
torch.cuda.synchronize()  # the setup is done: an error from here on is the fault below
print("torch_assert_then_op: launching x[index] (index 2000 of 1000), then .sum() and torch.mm", flush=True)
try:
    picked = x[index]  # FAULT_LINE
    total = picked.sum()  # launched at once, before anything waits for x[index]
    product = torch.mm(a, b)
    torch.cuda.synchronize()
    print(f"torch_assert_then_op: UNEXPECTED: no error (total {total.item()}, product {product.sum().item()})",
          flush=True)
except RuntimeError as error:
    print(f"torch_assert_then_op: {describe(error)}", flush=True)
    sys.exit(1)
sys.exit(0)
# SPDX-License-Identifier: MIT
