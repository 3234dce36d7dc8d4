// Tests a program linked with the static simulated runtime (libcudart_static.a): it still finds the driver
// with dlopen + cuGetProcAddress, and faults surface as usual (ctest sets CUDA_SIM_FAULT=_Z6staticv).
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include "check.h"
#include "sim_kernels.h"

SIM_KERNEL(static_kernel, "_Z6staticv");

int main() {
  CHECK(dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD) == nullptr);  // no shared runtime in this process
  CHECK_EQ(sim::launch(static_kernel, dim3(1), dim3(64)), cudaSuccess);
  CHECK(dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD) != nullptr);  // the driver was loaded at run time
  CHECK_EQ(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
  CHECK_EQ(cudaGetLastError(), cudaErrorIllegalAddress);
  const char* name = nullptr;
  CHECK_EQ(cudaFuncGetName(&name, reinterpret_cast<const void*>(static_kernel)), cudaSuccess);
  CHECK_STR(name, "_Z6staticv");
  return simtest::finish();
}
// SPDX-License-Identifier: MIT
