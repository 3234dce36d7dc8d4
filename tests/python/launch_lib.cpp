// A library that launches one simulated kernel (as nvcc's <<<>>> does), loaded into CPython with ctypes by
// test_report_python_line.py: the launch then comes from Python, with or without the GIL.
#include "sim_kernels.h"

SIM_KERNEL(fill, "_Z4fillPfif");

extern "C" __attribute__((visibility("default"))) int launch_fill() {
  return static_cast<int>(sim::launch(fill, dim3(64), dim3(128), nullptr));
}
