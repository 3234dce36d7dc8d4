# GPU case (issue 16, tests/gpu/attribution_case.sh): a Triton kernel that stores far out of bounds, followed
# at once by a PyTorch reduction (y.sum()), then torch.cuda.synchronize().
#
# The pattern of real programs: a hand-written Triton kernel with a missing mask or a bad offset inside a
# PyTorch model, whose next op is an ordinary PyTorch op. Triton launches with cuLaunchKernelEx (found with
# dlsym on libcuda.so.1) and checks only the launch call's own result; the fault is then returned by the
# launch check of the next PyTorch op (the sum's reduce_kernel) or by the synchronize, not by Triton. The
# faulting kernel is store_far_oob: no mask and an offset of 1 << 40 elements (4 TiB past the tensor),
# unmapped memory whatever the allocator holds: CUDA_ERROR_ILLEGAL_ADDRESS (700), as triton_oob.py's
# store_oob faulted on the H200. The line that launches it carries the marker comment the case greps for.
import sys
import traceback

try:
    import torch
    import triton
    import triton.language as tl
except ImportError as error:
    print(f"SKIPPED: {error}")
    sys.exit(77)
if not torch.cuda.is_available():
    print("SKIPPED: PyTorch sees no CUDA device")
    sys.exit(77)


def describe(error):
    """Where in this file the error surfaced, and the first line of its message."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == __file__]
    where = f"line {frames[-1].lineno} ({frames[-1].line.strip()})" if frames else "an unknown line"
    lines = str(error).splitlines()
    return f"{type(error).__name__} surfaced at {where}: {lines[0] if lines else ''}"


@triton.jit
def add_one(ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(ptr + offsets, tl.load(ptr + offsets, mask=mask) + 1.0, mask=mask)


@triton.jit
def store_far_oob(ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(ptr + offsets + (1 << 40), 1.0)  # the bug: no mask, and an offset 4 TiB past the end


n = 4096
BLOCK = 256
grid = (n // BLOCK,)
x = torch.zeros(n, device="cuda")
y = torch.ones(1 << 20, device="cuda")
add_one[grid](x, n, BLOCK=BLOCK, num_warps=4)  # a good Triton kernel first
torch.cuda.synchronize()  # the setup is done: an error from here on is the fault below
print("triton_oob_then_reduce: launching store_far_oob, then y.sum()", flush=True)
try:
    store_far_oob[grid](x, n, BLOCK=BLOCK, num_warps=4)  # FAULT_LINE
    total = y.sum()  # launched at once: PyTorch's launch check may be the first to see the fault
    torch.cuda.synchronize()
    print(f"triton_oob_then_reduce: UNEXPECTED: no error (total {total.item()})", flush=True)
except Exception as error:  # RuntimeError from PyTorch; Triton's launcher raises RuntimeError too
    print(f"triton_oob_then_reduce: {describe(error)}", flush=True)
    sys.exit(1)
sys.exit(0)
# SPDX-License-Identifier: MIT
