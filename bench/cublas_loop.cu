// Benchmark workload: a cuBLAS-heavy loop, cublasSgemm on square float32 matrices of one size, called
// N times on one stream after a warm-up, timed on the host until the last call's work completed
// (synchronized). The inputs are the same in every run (fixed values, no random numbers).
//   cublas_loop [size=512] [calls=4000]
// Prints "BENCH cublas_sgemm_<size> <microseconds per call> us" for bench/harness.py.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

bool check(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return true;
  std::fprintf(stderr, "cublas_loop: %s: %s\n", what, cudaGetErrorString(error));
  return false;
}

bool check(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return true;
  std::fprintf(stderr, "cublas_loop: %s: cuBLAS status %d\n", what, static_cast<int>(status));
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  int size = argc > 1 ? std::atoi(argv[1]) : 512;
  int calls = argc > 2 ? std::atoi(argv[2]) : 4000;
  if (size <= 0 || calls <= 0) {
    std::fprintf(stderr, "usage: cublas_loop [size>0] [calls>0]\n");
    return 2;
  }
  size_t elements = static_cast<size_t>(size) * size;
  std::vector<float> host(elements);
  for (size_t i = 0; i < elements; ++i) host[i] = static_cast<float>(i % 17) / 17.0f - 0.5f;
  float *a = nullptr, *b = nullptr, *c = nullptr;
  if (!check(cudaMalloc(&a, elements * sizeof(float)), "cudaMalloc") ||
      !check(cudaMalloc(&b, elements * sizeof(float)), "cudaMalloc") ||
      !check(cudaMalloc(&c, elements * sizeof(float)), "cudaMalloc") ||
      !check(cudaMemcpy(a, host.data(), elements * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy") ||
      !check(cudaMemcpy(b, host.data(), elements * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy"))
    return 1;
  cublasHandle_t handle = nullptr;
  if (!check(cublasCreate(&handle), "cublasCreate")) return 1;
  const float alpha = 1.0f, beta = 0.0f;
  auto gemm = [&] {
    return cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, size, size, size, &alpha, a, size, b, size, &beta, c,
                       size);
  };
  for (int i = 0; i < 50; ++i) {  // warm-up: heuristics, module load, first-sight naming
    if (!check(gemm(), "cublasSgemm")) return 1;
  }
  if (!check(cudaDeviceSynchronize(), "warm-up")) return 1;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) {
    if (!check(gemm(), "cublasSgemm")) return 1;
  }
  if (!check(cudaDeviceSynchronize(), "cudaDeviceSynchronize")) return 1;
  auto stop = std::chrono::steady_clock::now();
  double us = std::chrono::duration<double, std::micro>(stop - start).count() / calls;
  std::printf("BENCH cublas_sgemm_%d %.4f us\n", size, us);
  cublasDestroy(handle);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  return 0;
}
// SPDX-License-Identifier: MIT
