// GPU case: a cuBLAS SGEMM (m=n=k=512) given a bogus device pointer for A. cuBLAS launches its own
// kernel with cuLaunchKernelEx, through the driver entry points its static runtime found with
// cuGetProcAddress; the kernel reads A and faults (illegal address). cublasSgemm returns success
// without blocking: the error surfaces at cudaDeviceSynchronize. Under `cuda-blockrun --block all`
// the shim names cuBLAS's kernel and the cublasSgemm_v2 call that launched it.
// Built with nvcc -cudart shared -lcublas (tests/gpu/CMakeLists.txt). Prints every status it gets.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdio>

int main() {
  const int n = 512;
  cublasHandle_t handle = nullptr;
  cublasStatus_t status = cublasCreate(&handle);
  std::printf("cublasCreate returned %d (%s)\n", status, cublasGetStatusName(status));
  if (status != CUBLAS_STATUS_SUCCESS) return 1;
  float *b = nullptr, *c = nullptr;
  cudaError_t error = cudaMalloc(&b, sizeof(float) * n * n);
  std::printf("cudaMalloc B returned %s\n", cudaGetErrorName(error));
  error = cudaMalloc(&c, sizeof(float) * n * n);
  std::printf("cudaMalloc C returned %s\n", cudaGetErrorName(error));
  cudaMemset(b, 0, sizeof(float) * n * n);
  cudaMemset(c, 0, sizeof(float) * n * n);
  float* a = reinterpret_cast<float*>(0x10);  // the bug: A is no device memory
  const float alpha = 1.0f, beta = 0.0f;
  status = cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a, n, b, n, &beta, c, n);
  std::printf("cublasSgemm returned %d (%s)\n", status, cublasGetStatusName(status));
  error = cudaDeviceSynchronize();
  std::printf("cudaDeviceSynchronize returned %s\n", cudaGetErrorName(error));
  error = cudaGetLastError();
  std::printf("cudaGetLastError returned %s\n", cudaGetErrorName(error));
  std::printf("done\n");
  return error == cudaSuccess ? 0 : 1;
}
// SPDX-License-Identifier: MIT
