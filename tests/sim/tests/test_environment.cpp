// The machines the simulated stack plays besides a working one (issue 42): no driver installed
// (CUDA_SIM_NO_DRIVER), a driver older than the runtime (CUDA_SIM_DRIVER_VERSION), and a cuInit that fails
// (CUDA_SIM_INIT_ERROR). Each scenario runs in a child of its own: the runtime initializes once a process.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include "check.h"
#include "sim_kernels.h"

SIM_KERNEL(stencil, "_Z7stencilPfix");

namespace {

// What the real runtime answers where libcuda.so.1 is missing: "insufficient driver", and driver version 0.
void no_driver() {
  int version = -1;
  CHECK_EQ(cudaDriverGetVersion(&version), cudaSuccess);
  CHECK_EQ(version, 0);
  CHECK_EQ(sim::launch(stencil, dim3(1), dim3(1), nullptr), cudaErrorInsufficientDriver);
  void* pointer = nullptr;
  CHECK_EQ(cudaMalloc(&pointer, 16), cudaErrorInsufficientDriver);
  CHECK_EQ(cudaGetLastError(), cudaErrorInsufficientDriver);
}

// Driver 535 (CUDA 12.2) under a CUDA 13 runtime: the runtime refuses it; the driver itself still answers its
// version, and no longer hands out what CUDA 12.3+ added.
void driver_too_old() {
  int version = 0;
  CHECK_EQ(cudaRuntimeGetVersion(&version), cudaSuccess);
  CHECK_EQ(version, 13000);
  CHECK_EQ(sim::launch(stencil, dim3(1), dim3(1), nullptr), cudaErrorInsufficientDriver);
  CHECK_EQ(cudaDriverGetVersion(&version), cudaSuccess);
  CHECK_EQ(version, 12020);
  void* handle = dlopen("libcuda.so.1", RTLD_NOW);
  CHECK(handle != nullptr);
  auto get_proc = reinterpret_cast<decltype(&cuGetProcAddress_v2)>(dlsym(handle, "cuGetProcAddress_v2"));
  CHECK(get_proc != nullptr);
  void* found = reinterpret_cast<void*>(1);
  CUdriverProcAddressQueryResult status;
  CHECK_EQ(get_proc("cuKernelGetName", &found, 13000, 0, &status), CUDA_ERROR_NOT_FOUND);
  CHECK_EQ(status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  CHECK(found == nullptr);
  CHECK_EQ(get_proc("cuLaunchKernel", &found, 13000, 0, &status), CUDA_SUCCESS);
}

void no_device() {
  CHECK_EQ(sim::launch(stencil, dim3(1), dim3(1), nullptr), cudaErrorNoDevice);
  CHECK_EQ(cudaDeviceSynchronize(), cudaErrorNoDevice);
}

void driver_mismatch() {
  CHECK_EQ(sim::launch(stencil, dim3(1), dim3(1), nullptr), cudaErrorSystemDriverMismatch);
}

}  // namespace

int main() {
  using simtest::set_or_unset;
  int failed = 0;
  failed |= simtest::run_in_child(no_driver, "no driver", [] { set_or_unset("CUDA_SIM_NO_DRIVER", "1"); });
  failed |= simtest::run_in_child(driver_too_old, "driver too old",
                                  [] { set_or_unset("CUDA_SIM_DRIVER_VERSION", "12020"); });
  failed |=
      simtest::run_in_child(no_device, "no device", [] { set_or_unset("CUDA_SIM_INIT_ERROR", "no-device"); });
  failed |= simtest::run_in_child(driver_mismatch, "driver mismatch",
                                  [] { set_or_unset("CUDA_SIM_INIT_ERROR", "803"); });
  std::printf("\n");
  return failed;
}
// SPDX-License-Identifier: MIT
