# GPU case (issue 16, tests/gpu/attribution_case.sh): a CuPy RawKernel that writes far out of bounds, followed
# ONLY by allocations through CuPy's memory pool, and an exit without any synchronize.
#
# The pattern of real programs: a CuPy pipeline whose next step after a faulty kernel allocates its outputs:
# the first CUDA call to return the sticky error is then the pool's cudaMalloc, not a launch or a synchronize
# (issue 16: the shim missed such a fault entirely). The faulting kernel is far_write, which writes
# p[threadIdx.x + (1 << 40)] (4 Ti elements past a 256-float array: unmapped memory whatever the pool holds):
# CUDA_ERROR_ILLEGAL_ADDRESS (700), as cupy_oob.py's oob_write faulted on the H200. CuPy launches it with
# cuLaunchKernel (found with dlsym on libcuda.so.1). The line that launches it carries the marker comment the
# case greps for (never a hard-coded line number).
#
# The pool must really call cudaMalloc after the fault: it is emptied first (free_all_blocks), and every
# allocation after the fault is kept alive and larger than the one before, so no cached block can serve it.
# cupy.empty launches nothing (no memset), so cudaMalloc is the only CUDA call after the kernel.
import sys
import time

try:
    import cupy
except ImportError as error:
    print(f"SKIPPED: {error}")
    sys.exit(77)
try:
    if cupy.cuda.runtime.getDeviceCount() < 1:
        raise RuntimeError("no device")
except Exception as error:  # noqa: BLE001 - CuPy raises its own CUDARuntimeError without a driver
    print(f"SKIPPED: CuPy sees no CUDA device ({error})")
    sys.exit(77)

source = r"""
extern "C" __global__ void far_write(float* p, long long off) {
    p[threadIdx.x + off] = 1.0f;
}
"""
kernel = cupy.RawKernel(source, "far_write")
x = cupy.zeros(256, dtype=cupy.float32)
kernel((1,), (256,), (x, cupy.int64(0)))  # a good launch first (also compiles and loads the kernel)
cupy.cuda.Device().synchronize()  # the setup is done: an error from here on is the fault below
pool = cupy.get_default_memory_pool()
pool.free_all_blocks()  # an empty pool: every allocation below needs a cudaMalloc
print(f"cupy_fault_in_alloc: pool holds {pool.total_bytes()} bytes; launching far_write (offset 1 << 40), "
      "then only allocations", flush=True)
try:
    kernel((1,), (256,), (x, cupy.int64(1 << 40)))  # FAULT_LINE
except Exception as error:  # noqa: BLE001 - blocked by the shim, the launch itself returns the error
    print(f"cupy_fault_in_alloc: the far_write launch raised {type(error).__name__}: {error}", flush=True)
    sys.exit(1)

kept = []
MIB = 1 << 20
for allocation in range(1, 101):
    size = MIB + allocation * 64 * 1024  # new and larger every time: no cached block fits
    try:
        kept.append(cupy.empty(size, dtype=cupy.uint8))
    except Exception as error:  # noqa: BLE001 - CUDARuntimeError from the pool's cudaMalloc
        print(f"cupy_fault_in_alloc: allocation {allocation} ({size} bytes) raised {type(error).__name__}: "
              f"{error}", flush=True)
        sys.exit(1)
    time.sleep(0.01)  # no CUDA call: gives the device time to report the fault to the driver
print(f"cupy_fault_in_alloc: UNEXPECTED: 100 allocations succeeded after the fault "
      f"(pool: {pool.total_bytes()} bytes)", flush=True)
sys.exit(0)
# SPDX-License-Identifier: MIT
