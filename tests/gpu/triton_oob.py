# GPU case: a Triton kernel that stores far past the end of a tensor (no mask, offset 1 << 40
# elements), launched three times after a good Triton kernel. Triton launches with cuLaunchKernelEx,
# found with dlsym on libcuda.so.1. Without help the fault surfaces at torch.cuda.synchronize(); under
# `cuda-blockrun --block all` the first store_oob launch is blocked, Triton's launcher raises there,
# and the shim names store_oob. Skips (exit 77) where Triton or a CUDA GPU is missing.
import sys

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


@triton.jit
def add_one(ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(ptr + offsets, tl.load(ptr + offsets, mask=mask) + 1.0, mask=mask)


@triton.jit
def store_oob(ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(ptr + offsets + (1 << 40), 1.0)  # the bug: no mask, and an offset 4 TiB past the end


n = 4096
BLOCK = 256
x = torch.zeros(n, device="cuda")
grid = (n // BLOCK,)
add_one[grid](x, n, BLOCK=BLOCK, num_warps=4)
for launch in range(1, 4):
    try:
        store_oob[grid](x, n, BLOCK=BLOCK, num_warps=4)
    except Exception as error:  # Triton's launcher raises RuntimeError when cuLaunchKernelEx fails
        print(f"triton_oob: store_oob launch {launch} raised {type(error).__name__}: {error}")
try:
    torch.cuda.synchronize()
    print("triton_oob: torch.cuda.synchronize() succeeded")
except Exception as error:
    print(f"triton_oob: torch.cuda.synchronize() raised {type(error).__name__}: {str(error).splitlines()[0]}")
print("done")
# SPDX-License-Identifier: MIT
