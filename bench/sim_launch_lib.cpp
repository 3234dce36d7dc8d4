// Benchmark workload for Python on the simulated CUDA stack: a shared library with one exported function
// that launches one kernel (as nvcc's <<<>>> does), called through ctypes by bench/python_capture_cost.py.
#include "sim_kernels.h"

SIM_KERNEL(fill, "_Z4fillPfif");

extern "C" __attribute__((visibility("default"))) int bench_launch_one() {
  return static_cast<int>(sim::launch(fill, dim3(4096), dim3(256), nullptr));
}
// SPDX-License-Identifier: MIT
