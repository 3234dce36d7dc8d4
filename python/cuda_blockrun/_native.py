# SPDX-License-Identifier: MIT
"""The package's native files, and what the process has loaded.

The wheel, the build tree (build/python) and the install tree all lay the package out the same way:
cuda_blockrun/bin/cuda-blockrun (the wrapper), cuda_blockrun/lib/libcuda_blockrun.so (the shim; the wrapper finds
it at bin/../lib) and cuda_blockrun/lib/libcuda_blockrun_rebind.so (shim/rebind.cpp).
"""

import os

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
WRAPPER = os.path.join(PACKAGE_DIR, "bin", "cuda-blockrun")
REBIND_LIBRARY = os.path.join(PACKAGE_DIR, "lib", "libcuda_blockrun_rebind.so")
SHIM_FILE = "libcuda_blockrun.so"

# The objects whose presence means CUDA code was loaded before the shim: the driver, the runtime, the math
# libraries, and the frameworks' CUDA libraries that bind to them (file names up to their first dot).
CUDA_OBJECTS = (
    "libcuda",
    "libcudart",
    "libcublas",
    "libcublasLt",
    "libcudnn",
    "libnccl",
    "libnvrtc",
    "libtorch_cuda",
    "libc10_cuda",
)


def mapped_objects():
    """The paths of the shared objects mapped into this process (/proc/self/maps), in order of first mapping."""
    paths = []
    seen = set()
    try:
        with open("/proc/self/maps", "r", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                fields = line.split(None, 5)
                if len(fields) < 6:
                    continue
                path = fields[5].strip()
                if path.startswith("/") and ".so" in path and path not in seen:
                    seen.add(path)
                    paths.append(path)
    except OSError:
        pass
    return paths


def stem(path):
    """`libcudart.so.13` -> `libcudart`."""
    return os.path.basename(path).split(".", 1)[0]


def loaded_cuda_objects():
    """The CUDA objects (CUDA_OBJECTS) already mapped, as paths."""
    return [path for path in mapped_objects() if stem(path) in CUDA_OBJECTS]


def loaded_shim():
    """The path of a libcuda_blockrun.so already mapped (LD_PRELOAD, or an earlier load), or None."""
    for path in mapped_objects():
        if os.path.basename(path) == SHIM_FILE:
            return path
    return None
