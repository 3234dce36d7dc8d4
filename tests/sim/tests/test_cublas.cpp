// Tests the simulated cuBLAS: argument validation, launches on the handle's stream, and a bad matrix pointer
// that faults at the next synchronize of that stream while the GEMM call itself succeeds.
#include <cublas_api.h>
#include <cuda_runtime_api.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "check.h"
#include "sim_kernels.h"

int main() {
  cublasHandle_t h = nullptr;
  CHECK_EQ(cublasCreate_v2(&h), CUBLAS_STATUS_SUCCESS);
  cudaStream_t s, other;
  CHECK_EQ(cudaStreamCreate(&s), cudaSuccess);
  CHECK_EQ(cudaStreamCreate(&other), cudaSuccess);
  CHECK_EQ(cublasSetStream_v2(h, s), CUBLAS_STATUS_SUCCESS);
  cudaStream_t got = nullptr;
  CHECK_EQ(cublasGetStream_v2(h, &got), CUBLAS_STATUS_SUCCESS);
  CHECK(got == s);

  const int n = 64;
  float *A, *B, *C;
  CHECK_EQ(cudaMalloc(reinterpret_cast<void**>(&A), n * n * sizeof(float)), cudaSuccess);
  CHECK_EQ(cudaMalloc(reinterpret_cast<void**>(&B), n * n * sizeof(float)), cudaSuccess);
  CHECK_EQ(cudaMalloc(reinterpret_cast<void**>(&C), n * n * sizeof(float)), cudaSuccess);
  const float one = 1.0f, zero = 0.0f;

  CHECK_EQ(cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, A, n, B, n, &zero, C, n),
           CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(cublasSgemmStridedBatched(h, CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, &one, A, n, 0, B, n, 0, &zero, C,
                                     n, 0, 2),
           CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  // Invalid arguments: rejected at once, nothing launched.
  CHECK_EQ(cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, -1, n, n, &one, A, n, B, n, &zero, C, n),
           CUBLAS_STATUS_INVALID_VALUE);
  CHECK_EQ(cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, A, n - 1, B, n, &zero, C, n),
           CUBLAS_STATUS_INVALID_VALUE);
  CHECK_EQ(cublasSgemm_v2(nullptr, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, A, n, B, n, &zero, C, n),
           CUBLAS_STATUS_NOT_INITIALIZED);

  // A host pointer as B: the call succeeds, the kernel faults, the next synchronize of s reports it.
  std::vector<float> host(n * n);
  CHECK_EQ(cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, A, n, host.data(), n, &zero, C, n),
           CUBLAS_STATUS_SUCCESS);
  CHECK_EQ(cudaStreamSynchronize(other), cudaSuccess);
  CHECK_EQ(cudaStreamSynchronize(s), cudaErrorIllegalAddress);
  CHECK_EQ(cudaGetLastError(), cudaErrorIllegalAddress);
  CHECK_EQ(cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, A, n, B, n, &zero, C, n),
           CUBLAS_STATUS_EXECUTION_FAILED);
  CHECK_STR(cublasGetStatusName(CUBLAS_STATUS_EXECUTION_FAILED), "CUBLAS_STATUS_EXECUTION_FAILED");

  sim::write_stats();
  const char* env = std::getenv("CUDA_SIM_STATS");  // set by ctest
  CHECK(env != nullptr);
  std::ifstream in(env ? env : "");
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(all.find("launches=3\n") != std::string::npos);
  CHECK(all.find("faults_injected=1\n") != std::string::npos);
  CHECK_EQ(cublasDestroy_v2(h), CUBLAS_STATUS_SUCCESS);
  return simtest::finish();
}
// SPDX-License-Identifier: MIT
