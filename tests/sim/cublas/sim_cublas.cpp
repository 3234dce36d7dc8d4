// Simulated cuBLAS (libcublas.so.13): GEMM entry points that validate like the real library and launch one
// internal kernel through the driver, so cuda-blockrun can be tested on library launches without a GPU.
//
// Like the real CUDA 13 math libraries it does not link libcudart: it finds the driver with dlopen +
// cuGetProcAddress (common/driver_loader.h) and launches with cuLaunchKernelEx on the handle's stream.
//
// Kernels: one module per process, loaded with cuModuleLoadData from the sim's own image format
// "SIMIMG1 ptrparams=0,1,2"; kernels are CUfunctions from cuModuleGetFunction, named like real cuBLAS kernels
// (e.g.
// sm90_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4_execute_kernel_cublas).
// The image tells the simulated driver that parameters 0, 1 and 2 (A, B, C) are device pointers the kernel
// dereferences: if one is outside device memory, the launch succeeds and the kernel faults with an illegal
// address, reported at the next synchronization, exactly as a bad pointer given to the real cuBLAS behaves.

#include <cublas_api.h>
#include <cuda.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "../common/driver_loader.h"

#define SIM_BLAS extern "C" __attribute__((visibility("default")))

struct cublasContext {
  CUstream stream = nullptr;  // legacy default stream until cublasSetStream
};

namespace {

struct Driver {
  decltype(&cuInit) Init = nullptr;
  decltype(&cuDeviceGet) DeviceGet = nullptr;
  decltype(&cuDevicePrimaryCtxRetain) PrimaryCtxRetain = nullptr;
  decltype(&cuModuleLoadData) ModuleLoadData = nullptr;
  decltype(&cuModuleGetFunction) ModuleGetFunction = nullptr;
  decltype(&cuLaunchKernelEx) LaunchKernelEx = nullptr;
  CUmodule module = nullptr;
  bool ok = false;
};

Driver g_drv;
std::once_flag g_once;
std::mutex g_mu;
std::map<std::string, CUfunction>* g_functions = new std::map<std::string, CUfunction>;  // never freed

const char kImage[] = "SIMIMG1 ptrparams=0,1,2\n";

void init() {
  DriverLoader loader;
  if (!loader.open()) return;
  bool ok = loader.get("cuInit", &g_drv.Init) && loader.get("cuDeviceGet", &g_drv.DeviceGet) &&
            loader.get("cuDevicePrimaryCtxRetain", &g_drv.PrimaryCtxRetain) &&
            loader.get("cuModuleLoadData", &g_drv.ModuleLoadData) &&
            loader.get("cuModuleGetFunction", &g_drv.ModuleGetFunction) &&
            loader.get("cuLaunchKernelEx", &g_drv.LaunchKernelEx);
  if (!ok) return;
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  if (g_drv.Init(0) || g_drv.DeviceGet(&dev, 0) || g_drv.PrimaryCtxRetain(&ctx, dev)) return;
  if (g_drv.ModuleLoadData(&g_drv.module, kImage)) return;
  g_drv.ok = true;
}

CUfunction function_for(const std::string& name) {
  std::lock_guard<std::mutex> lk(g_mu);
  CUfunction& f = (*g_functions)[name];
  if (!f && g_drv.ModuleGetFunction(&f, g_drv.module, name.c_str()) != CUDA_SUCCESS) f = nullptr;
  return f;
}

bool valid_op(cublasOperation_t op) {
  return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C;
}
char op_letter(cublasOperation_t op) {
  return op == CUBLAS_OP_N ? 'n' : 't';
}

// The argument checks of the real GEMMs: negative sizes or leading dimensions smaller than the stored rows.
cublasStatus_t check_gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int64_t m, int64_t n,
                          int64_t k, int64_t lda, int64_t ldb, int64_t ldc, const void* alpha,
                          const void* beta) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!valid_op(ta) || !valid_op(tb)) return CUBLAS_STATUS_INVALID_VALUE;
  if (m < 0 || n < 0 || k < 0) return CUBLAS_STATUS_INVALID_VALUE;
  const int64_t rows_a = ta == CUBLAS_OP_N ? m : k;
  const int64_t rows_b = tb == CUBLAS_OP_N ? k : n;
  if (lda < std::max<int64_t>(1, rows_a) || ldb < std::max<int64_t>(1, rows_b) ||
      ldc < std::max<int64_t>(1, m))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (!alpha || !beta) return CUBLAS_STATUS_INVALID_VALUE;
  return CUBLAS_STATUS_SUCCESS;
}

const char* type_code(cudaDataType t) {
  switch (t) {
    case CUDA_R_16F:
      return "f16";
    case CUDA_R_16BF:
      return "bf16";
    case CUDA_R_32F:
      return "f32";
    case CUDA_R_64F:
      return "f64";
    case CUDA_R_8I:
      return "s8";
    case CUDA_R_32I:
      return "s32";
    default:
      return "x";
  }
}

// Launches the internal GEMM kernel: grid of 128x128 tiles (z = batch), 128 threads (2x2 warps), params
// {A, B, C, m, n, k, lda, ldb, ldc, alpha, beta, strideA, strideB, strideC, batch}.
cublasStatus_t run_gemm(cublasHandle_t h, const std::string& kernel, int64_t m, int64_t n, int64_t k,
                        const void* A, int64_t lda, const void* B, int64_t ldb, void* C, int64_t ldc,
                        const void* alpha, const void* beta, int64_t sa, int64_t sb, int64_t sc,
                        int64_t batch) {
  if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;  // quick return, nothing launched
  CUfunction f = function_for(kernel);
  if (!f) return CUBLAS_STATUS_EXECUTION_FAILED;
  void* params[] = {&A, &B, &C, &m, &n, &k, &lda, &ldb, &ldc, &alpha, &beta, &sa, &sb, &sc, &batch};
  CUlaunchConfig cfg{};
  cfg.gridDimX = static_cast<unsigned>((m + 127) / 128);
  cfg.gridDimY = static_cast<unsigned>((n + 127) / 128);
  cfg.gridDimZ = static_cast<unsigned>(batch);
  cfg.blockDimX = 128;
  cfg.blockDimY = 1;
  cfg.blockDimZ = 1;
  cfg.hStream = h->stream;
  return g_drv.LaunchKernelEx(&cfg, f, params, nullptr) == CUDA_SUCCESS ? CUBLAS_STATUS_SUCCESS
                                                                        : CUBLAS_STATUS_EXECUTION_FAILED;
}

std::string xmma_name(const char* types, cublasOperation_t ta, cublasOperation_t tb, const char* tail) {
  std::string s = "sm90_xmma_gemm_";
  s += types;
  s += '_';
  s += op_letter(ta);
  s += op_letter(tb);
  s += "_n_";
  s += tail;
  return s;
}

const char kF32Tail[] = "tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4_execute_kernel_cublas";
const char kF64Tail[] = "tilesize64x64x16_stage3_warpsize2x2x1_dmma_aligna8_alignc8_execute_kernel_cublas";
const char kTensorTail[] = "tilesize128x128x32_stage4_warpsize2x2x1_tensor16x8x16_execute_kernel_cublas";

}  // namespace

// =====================================================================================================================

SIM_BLAS cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
  std::call_once(g_once, init);
  if (!g_drv.ok) return CUBLAS_STATUS_NOT_INITIALIZED;
  *handle = new cublasContext;
  return CUBLAS_STATUS_SUCCESS;
}

SIM_BLAS cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

SIM_BLAS cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}

SIM_BLAS cublasStatus_t cublasGetStream_v2(cublasHandle_t handle, cudaStream_t* stream) {
  if (!handle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!stream) return CUBLAS_STATUS_INVALID_VALUE;
  *stream = handle->stream;
  return CUBLAS_STATUS_SUCCESS;
}

SIM_BLAS cublasStatus_t cublasSgemm_v2_64(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                                          int64_t m, int64_t n, int64_t k, const float* alpha, const float* A,
                                          int64_t lda, const float* B, int64_t ldb, const float* beta,
                                          float* C, int64_t ldc) {
  if (cublasStatus_t s = check_gemm(h, ta, tb, m, n, k, lda, ldb, ldc, alpha, beta)) return s;
  return run_gemm(h, xmma_name("f32f32_f32f32_f32", ta, tb, kF32Tail), m, n, k, A, lda, B, ldb, C, ldc, alpha,
                  beta, 0, 0, 0, 1);
}

SIM_BLAS cublasStatus_t cublasSgemm_v2(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                                       int n, int k, const float* alpha, const float* A, int lda,
                                       const float* B, int ldb, const float* beta, float* C, int ldc) {
  return cublasSgemm_v2_64(h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

SIM_BLAS cublasStatus_t cublasDgemm_v2(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                                       int n, int k, const double* alpha, const double* A, int lda,
                                       const double* B, int ldb, const double* beta, double* C, int ldc) {
  if (cublasStatus_t s = check_gemm(h, ta, tb, m, n, k, lda, ldb, ldc, alpha, beta)) return s;
  return run_gemm(h, xmma_name("f64f64_f64f64_f64", ta, tb, kF64Tail), m, n, k, A, lda, B, ldb, C, ldc, alpha,
                  beta, 0, 0, 0, 1);
}

SIM_BLAS cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta,
                                                  cublasOperation_t tb, int m, int n, int k,
                                                  const float* alpha, const float* A, int lda, long long sa,
                                                  const float* B, int ldb, long long sb, const float* beta,
                                                  float* C, int ldc, long long sc, int batch) {
  if (cublasStatus_t s = check_gemm(h, ta, tb, m, n, k, lda, ldb, ldc, alpha, beta)) return s;
  if (batch < 0 || batch > 65535) return CUBLAS_STATUS_INVALID_VALUE;
  return run_gemm(h, xmma_name("f32f32_f32f32_f32", ta, tb, kF32Tail), m, n, k, A, lda, B, ldb, C, ldc, alpha,
                  beta, sa, sb, sc, batch);
}

SIM_BLAS cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                                     int n, int k, const void* alpha, const void* A, cudaDataType at, int lda,
                                     const void* B, cudaDataType bt, int ldb, const void* beta, void* C,
                                     cudaDataType ct, int ldc, cublasComputeType_t /*compute*/,
                                     cublasGemmAlgo_t /*algo*/) {
  if (cublasStatus_t s = check_gemm(h, ta, tb, m, n, k, lda, ldb, ldc, alpha, beta)) return s;
  std::string types =
      std::string(type_code(at)) + type_code(bt) + "_" + type_code(ct) + "f32_" + type_code(ct);
  return run_gemm(h, xmma_name(types.c_str(), ta, tb, kTensorTail), m, n, k, A, lda, B, ldb, C, ldc, alpha,
                  beta, 0, 0, 0, 1);
}

SIM_BLAS cublasStatus_t cublasSgemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                                      int n, int k, const float* alpha, const void* A, cudaDataType at,
                                      int lda, const void* B, cudaDataType bt, int ldb, const float* beta,
                                      void* C, cudaDataType ct, int ldc) {
  if (cublasStatus_t s = check_gemm(h, ta, tb, m, n, k, lda, ldb, ldc, alpha, beta)) return s;
  std::string types =
      std::string(type_code(at)) + type_code(bt) + "_" + type_code(ct) + "f32_" + type_code(ct);
  return run_gemm(h, xmma_name(types.c_str(), ta, tb, kTensorTail), m, n, k, A, lda, B, ldb, C, ldc, alpha,
                  beta, 0, 0, 0, 1);
}

SIM_BLAS const char* cublasGetStatusName(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR:
      return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "<unknown>";
}

SIM_BLAS const char* cublasGetStatusString(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS:
      return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "an absent device architectural feature is required";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "an access to GPU memory space failed";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "the GPU program failed to execute";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "an internal operation failed";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "the functionality requested is not supported";
    case CUBLAS_STATUS_LICENSE_ERROR:
      return "the functionality requested requires some license";
  }
  return "<unknown>";
}
// SPDX-License-Identifier: MIT
