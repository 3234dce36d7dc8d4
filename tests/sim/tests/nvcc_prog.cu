// A real nvcc-built program (`nvcc -cudart shared`) run on the simulated stack; ctest sets
// CUDA_SIM_FAULT=stencil:2. Its <<<>>> launches go through __cudaGetKernel/__cudaLaunchKernel of whichever
// libcudart.so.13 is loaded.
#include <cstdio>
#include <cstring>

__global__ void stencil(float* p, int n, long x) {
  if (threadIdx.x < n) p[threadIdx.x] = static_cast<float>(x);
}

static int failures = 0;
#define EXPECT(cond)                                                \
  do {                                                              \
    if (!(cond)) {                                                  \
      std::printf("%s:%d: %s failed\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                   \
    }                                                               \
  } while (0)

int main() {
  float* d = nullptr;
  EXPECT(cudaMalloc(&d, 64 * sizeof(float)) == cudaSuccess);
  const char* name = nullptr;
  EXPECT(cudaFuncGetName(&name, stencil) == cudaSuccess);
  EXPECT(name && std::strcmp(name, "_Z7stencilPfil") == 0);
  stencil<<<1, 16>>>(d, 16, 3);
  EXPECT(cudaGetLastError() == cudaSuccess);
  EXPECT(cudaDeviceSynchronize() == cudaSuccess);
  stencil<<<1, 2048>>>(d, 16, 3);  // invalid configuration: reported at once
  EXPECT(cudaGetLastError() == cudaErrorInvalidValue);
  stencil<<<1, 16>>>(d, 16, 3);  // 2nd launch that reaches the device: faults
  EXPECT(cudaGetLastError() == cudaSuccess);
  cudaError_t e = cudaDeviceSynchronize();
  EXPECT(e == cudaErrorIllegalAddress);
  EXPECT(std::strcmp(cudaGetErrorString(e), "an illegal memory access was encountered") == 0);
  EXPECT(cudaGetLastError() == cudaErrorIllegalAddress);
  std::printf("%s\n", failures ? "FAILED" : "all checks passed");
  return failures ? 1 : 0;
}
// SPDX-License-Identifier: MIT
