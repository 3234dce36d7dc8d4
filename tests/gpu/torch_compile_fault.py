# GPU case (issue 16, tests/gpu/attribution_case.sh): a function compiled by torch.compile (default backend,
# inductor) that gathers rows with an out-of-range index, so that the Triton kernel inductor generated faults.
#
# The pattern of real programs: a compiled model whose embedding / gather gets a bad id. Inductor lowers
# `table[index] * 2.0` to one pointwise Triton kernel (named like triton_poi_fused_index_mul_0) with an
# indirect load; it guards the index with a device-side assert by default (assert_indirect_indexing), and the
# bad id (10**9 rows of 64 floats past a 1000-row table: 256 GB) is unmapped memory should the assert be off:
# either way the kernel faults (cudaErrorAssert 710, or an illegal address 700). Inductor's generated code
# and Triton's launcher sit between this file and the launch, and so does Dynamo's frame of `lookup` (the
# function's file and name, its first line). The line that CALLS the compiled function carries the marker
# comment the case greps for (never a hard-coded line number).
#
# The function is compiled and run once with good indices first (the same shapes, so the faulting call reuses
# that compilation), so that compilation happens before the fault and the faulting call launches only the
# kernel and its follow-up. Skips (77) where torch.compile cannot be used: no PyTorch with CUDA, no Triton,
# a Python that dynamo does not support, or a compilation that fails on the good call.
# Inductor's cache directory is left at its default (the shim must cope with it); its compile workers are one
# (TORCHINDUCTOR_COMPILE_THREADS=1, unless set): no subprocess pool for a single small kernel.
import os
import sys
import traceback

os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")

try:
    import torch
    import triton  # noqa: F401 - inductor's CUDA backend generates Triton kernels
except ImportError as error:
    print(f"SKIPPED: {error}")
    sys.exit(77)
if not torch.cuda.is_available():
    print("SKIPPED: PyTorch sees no CUDA device")
    sys.exit(77)
if not hasattr(torch, "compile"):
    print(f"SKIPPED: PyTorch {torch.__version__} has no torch.compile")
    sys.exit(77)
try:
    import torch._dynamo

    if hasattr(torch._dynamo, "is_dynamo_supported") and not torch._dynamo.is_dynamo_supported():
        print(f"SKIPPED: torch.compile does not support this Python ({sys.version.split()[0]})")
        sys.exit(77)
except ImportError as error:
    print(f"SKIPPED: torch._dynamo: {error}")
    sys.exit(77)


def describe(error):
    """Where in this file the error surfaced (innermost line of this file), and its message's first line."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == __file__]
    where = f"line {frames[-1].lineno} ({frames[-1].line.strip()})" if frames else "an unknown line"
    lines = str(error).splitlines()
    return f"{type(error).__name__} surfaced at {where}: {lines[0] if lines else ''}"


def lookup(table, index):
    return table[index] * 2.0


compiled_lookup = torch.compile(lookup)  # the default backend: inductor

torch.manual_seed(0)
table = torch.randn(1000, 64, device="cuda")
good = torch.randint(0, 1000, (256,), device="cuda")
bad = good.clone()
bad[3] = 10**9  # the bug: far past the 1000 rows
torch.cuda.synchronize()

try:
    expected = compiled_lookup(table, good)  # compiles (inductor, Triton) and runs with good indices
    torch.cuda.synchronize()
    if not torch.equal(expected, table[good] * 2.0):
        print("torch_compile_fault: note: the compiled result differs from eager (not what this case tests)")
except Exception as error:  # noqa: BLE001 - BackendCompilerFailed, a missing compiler, ...
    traceback.print_exc()
    print(f"SKIPPED: torch.compile could not compile and run the good call: {describe(error)}")
    sys.exit(77)
print(f"torch_compile_fault: compiled with {torch.__version__}; calling it with index {10**9} "
      "(1000 rows), then .sum()", flush=True)
try:
    result = compiled_lookup(table, bad)  # FAULT_LINE
    total = result.sum()  # launched at once: an eager reduction after the compiled kernel
    torch.cuda.synchronize()
    print(f"torch_compile_fault: UNEXPECTED: no error (total {total.item()})", flush=True)
except Exception as error:  # noqa: BLE001 - RuntimeError (or inductor's wrapper of it)
    print(f"torch_compile_fault: {describe(error)}", flush=True)
    sys.exit(1)
sys.exit(0)
# SPDX-License-Identifier: MIT
