# GPU case: a cupy.RawKernel that writes p[threadIdx.x + off], launched five times; its third launch is
# given a huge offset (1 << 40 elements) and faults. CuPy launches with cuLaunchKernel, found with
# dlsym on libcuda.so.1. Without help the fault surfaces at the final synchronize; under
# `cuda-blockrun --block all` the third launch is blocked, CuPy raises there, and the shim names
# oob_write. Skips (exit 77) where CuPy or a CUDA GPU is missing.
import sys

try:
    import cupy
except ImportError as error:
    print(f"SKIPPED: {error}")
    sys.exit(77)
try:
    if cupy.cuda.runtime.getDeviceCount() < 1:
        raise RuntimeError("no device")
except Exception as error:
    print(f"SKIPPED: CuPy sees no CUDA device ({error})")
    sys.exit(77)

source = r"""
extern "C" __global__ void oob_write(float* p, long long off) {
    p[threadIdx.x + off] = 1.0f;
}
"""
kernel = cupy.RawKernel(source, "oob_write")
x = cupy.zeros(256, dtype=cupy.float32)
for launch in range(1, 6):
    offset = (1 << 40) if launch == 3 else 0  # the bug, in the third launch
    try:
        kernel((1,), (256,), (x, cupy.int64(offset)))
    except Exception as error:  # CuPy raises CUDADriverError when cuLaunchKernel fails
        print(f"cupy_oob: oob_write launch {launch} raised {type(error).__name__}: {error}")
try:
    cupy.cuda.Device().synchronize()
    print("cupy_oob: synchronize succeeded")
except Exception as error:
    print(f"cupy_oob: synchronize raised {type(error).__name__}: {error}")
print("done")
# SPDX-License-Identifier: MIT
