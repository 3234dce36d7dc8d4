// A library that launches simulated kernels (as nvcc's <<<>>> does), loaded into CPython with ctypes by
// test_report_python_line.py: the launches then come from Python, with or without the GIL.
#include <cuda_runtime_api.h>

#include "sim_kernels.h"

SIM_KERNEL(fill, "_Z4fillPfif");
SIM_KERNEL(stencil, "_Z7stencilPfPKfix");

extern "C" __attribute__((visibility("default"))) int launch_fill() {
  return static_cast<int>(sim::launch(fill, dim3(64), dim3(128), nullptr));
}

extern "C" __attribute__((visibility("default"))) int launch_stencil() {
  return static_cast<int>(sim::launch(stencil, dim3(64), dim3(128), nullptr));
}

// Where an asynchronous fault surfaces, long after its launch.
extern "C" __attribute__((visibility("default"))) int synchronize() {
  return static_cast<int>(cudaDeviceSynchronize());
}
