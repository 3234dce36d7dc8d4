// Tests cuEventElapsedTime[_v2] and simulated kernel run times. CMakeLists.txt sets
// CUDA_SIM_KERNEL_US=stencil=20000,ns::kern=3000,_Z4fillPf=5000,sm90_*=2000 and CUDA_SIM_FAULT=boom.
#include <cuda.h>
#include <dlfcn.h>

#include "check.h"

#undef cuEventElapsedTime
extern "C" CUresult cuEventElapsedTime(float*, CUevent, CUevent);  // the pre-12.8 entry point

namespace {
CUfunction kernel(CUlibrary l, const char* mangled) {
  CUkernel k = nullptr;
  CHECK_EQ(cuLibraryGetKernel(&k, l, mangled), CUDA_SUCCESS);
  return reinterpret_cast<CUfunction>(k);
}

CUresult launch(CUfunction f, CUstream s = nullptr) {
  return cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr);
}

// Milliseconds between events recorded just before and just after one launch of f on s.
float time_launch(CUfunction f, CUstream s, CUevent a, CUevent b) {
  float ms = -1;
  CHECK_EQ(cuEventRecord(a, s), CUDA_SUCCESS);
  CHECK_EQ(launch(f, s), CUDA_SUCCESS);
  CHECK_EQ(cuEventRecord(b, s), CUDA_SUCCESS);
  CHECK_EQ(cuEventElapsedTime_v2(&ms, a, b), CUDA_SUCCESS);
  return ms;
}
}  // namespace

int main() {
  float ms = -1;
  CHECK_EQ(cuEventElapsedTime_v2(&ms, nullptr, nullptr), CUDA_ERROR_NOT_INITIALIZED);

  // --- entry points: cuda.h's cuEventElapsedTime is _v2 (12.8); the old one stays exported ---
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  CHECK(lib != nullptr);
  void* p = nullptr;
  CUdriverProcAddressQueryResult st;
  CHECK_EQ(cuGetProcAddress_v2("cuEventElapsedTime", &p, 13000, 0, &st), CUDA_SUCCESS);
  CHECK(p == dlsym(lib, "cuEventElapsedTime_v2"));
  CHECK_EQ(cuGetProcAddress_v2("cuEventElapsedTime", &p, 12080, 0, &st), CUDA_SUCCESS);
  CHECK(p == dlsym(lib, "cuEventElapsedTime_v2"));
  CHECK_EQ(cuGetProcAddress_v2("cuEventElapsedTime", &p, 12000, 0, &st), CUDA_SUCCESS);
  CHECK(p == dlsym(lib, "cuEventElapsedTime"));
  CHECK(p != nullptr);
  CHECK_EQ(cuGetProcAddress_v2("cuEventElapsedTime", &p, 1000, 0, &st), CUDA_ERROR_NOT_FOUND);
  CHECK_EQ(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);

  CHECK_EQ(cuInit(0), CUDA_SUCCESS);
  CUlibrary l;
  CHECK_EQ(cuLibraryLoadData(&l, "image", nullptr, nullptr, 0, nullptr, nullptr, 0), CUDA_SUCCESS);
  CUfunction stencil = kernel(l, "_Z7stencilPfix");    // "stencil": 20 ms
  CUfunction kern = kernel(l, "_ZN2ns4kernIiEEvPT_");  // "ns::kern<int>", matched as "ns::kern": 3 ms
  CUfunction fill = kernel(l, "_Z4fillPf");            // matched by its mangled name: 5 ms
  CUfunction boom = kernel(l, "_Z4boomv");             // faults (CUDA_SIM_FAULT)
  CUmodule mod;
  CHECK_EQ(cuModuleLoadData(&mod, "image"), CUDA_SUCCESS);
  CUfunction gemm = nullptr;  // a CUfunction, matched by the pattern "sm90_*": 2 ms
  CHECK_EQ(cuModuleGetFunction(&gemm, mod, "sm90_xmma_gemm_f32f32_f32f32_f32_nn_n_kernel"), CUDA_SUCCESS);

  CUevent a, b, c, notiming, unrecorded;
  CHECK_EQ(cuEventCreate(&a, CU_EVENT_DEFAULT), CUDA_SUCCESS);
  CHECK_EQ(cuEventCreate(&b, CU_EVENT_DEFAULT), CUDA_SUCCESS);
  CHECK_EQ(cuEventCreate(&c, CU_EVENT_DEFAULT), CUDA_SUCCESS);
  CHECK_EQ(cuEventCreate(&notiming, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  CHECK_EQ(cuEventCreate(&unrecorded, CU_EVENT_DEFAULT), CUDA_SUCCESS);
  CUstream s;
  CHECK_EQ(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);

  // --- errors before anything was recorded ---
  CHECK_EQ(cuEventElapsedTime_v2(&ms, a, b), CUDA_ERROR_INVALID_HANDLE);  // neither recorded
  CHECK_EQ(cuEventRecord(a, nullptr), CUDA_SUCCESS);
  CHECK_EQ(cuEventElapsedTime_v2(&ms, a, unrecorded), CUDA_ERROR_INVALID_HANDLE);
  CHECK_EQ(cuEventElapsedTime_v2(&ms, unrecorded, a), CUDA_ERROR_INVALID_HANDLE);
  CHECK_EQ(cuEventElapsedTime(&ms, a, unrecorded), CUDA_ERROR_INVALID_HANDLE);

  // --- kernel run times: the launch busy-waits, so events around it are at least that far apart ---
  ms = time_launch(stencil, nullptr, a, b);
  CHECK(ms >= 20.0f);
  ms = time_launch(stencil, s, a, b);
  CHECK(ms >= 20.0f);
  ms = time_launch(kern, s, a, b);
  CHECK(ms >= 3.0f);
  ms = time_launch(fill, CU_STREAM_PER_THREAD, a, b);
  CHECK(ms >= 5.0f);
  ms = time_launch(gemm, s, a, b);
  CHECK(ms >= 2.0f);
  CHECK_EQ(cuEventRecord(a, s), CUDA_SUCCESS);  // cuLaunchKernelEx (cuBLAS's way) takes the time too
  CUlaunchConfig cfg{};
  cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = 128;
  cfg.blockDimY = cfg.blockDimZ = 1;
  cfg.hStream = s;
  CHECK_EQ(cuLaunchKernelEx(&cfg, stencil, nullptr, nullptr), CUDA_SUCCESS);
  CHECK_EQ(cuEventRecord(b, s), CUDA_SUCCESS);
  CHECK_EQ(cuEventElapsedTime_v2(&ms, a, b), CUDA_SUCCESS);
  CHECK(ms >= 20.0f);
  float legacy = -1;  // the old entry point answers the same
  CHECK_EQ(cuEventElapsedTime(&legacy, a, b), CUDA_SUCCESS);
  CHECK_EQ(legacy == ms, true);
  CHECK_EQ(cuEventElapsedTime_v2(&ms, b, a), CUDA_SUCCESS);  // reversed: negative
  CHECK(ms <= -20.0f);
  CHECK_EQ(cuEventElapsedTime_v2(&ms, a, a), CUDA_SUCCESS);
  CHECK_EQ(ms == 0.0f, true);

  // --- argument errors (as measured on the real driver) ---
  CHECK_EQ(cuEventElapsedTime_v2(nullptr, a, b), CUDA_ERROR_INVALID_HANDLE);
  CHECK_EQ(cuEventElapsedTime_v2(&ms, nullptr, b), CUDA_ERROR_INVALID_HANDLE);
  CHECK_EQ(cuEventElapsedTime_v2(&ms, a, nullptr), CUDA_ERROR_INVALID_HANDLE);
  CHECK_EQ(cuEventElapsedTime_v2(&ms, a, reinterpret_cast<CUevent>(s)), CUDA_ERROR_INVALID_HANDLE);
  CHECK_EQ(cuEventRecord(notiming, nullptr), CUDA_SUCCESS);
  CHECK_EQ(cuEventElapsedTime_v2(&ms, a, notiming), CUDA_ERROR_INVALID_HANDLE);
  CHECK_EQ(cuEventElapsedTime_v2(&ms, notiming, a), CUDA_ERROR_INVALID_HANDLE);
  CUevent gone;
  CHECK_EQ(cuEventCreate(&gone, 0), CUDA_SUCCESS);
  CHECK_EQ(cuEventRecord(gone, nullptr), CUDA_SUCCESS);
  CHECK_EQ(cuEventDestroy_v2(gone), CUDA_SUCCESS);
  CHECK_EQ(cuEventElapsedTime_v2(&ms, a, gone), CUDA_ERROR_INVALID_HANDLE);

  // --- capture: an event recorded into a capture has no time; a replayed graph takes its kernels' time ---
  CHECK_EQ(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  CHECK_EQ(launch(stencil, s), CUDA_SUCCESS);  // captured: not run
  CHECK_EQ(cuEventRecord(c, s), CUDA_SUCCESS);
  CHECK_EQ(cuEventElapsedTime_v2(&ms, a, c), CUDA_ERROR_CAPTURED_EVENT);
  CHECK_EQ(cuEventElapsedTime_v2(&ms, c, notiming), CUDA_ERROR_CAPTURED_EVENT);  // the start is checked first
  CHECK_EQ(cuEventElapsedTime_v2(&ms, unrecorded, c), CUDA_ERROR_INVALID_HANDLE);
  CUgraph g;
  CHECK_EQ(cuStreamEndCapture(s, &g), CUDA_SUCCESS);
  CHECK_EQ(cuEventElapsedTime_v2(&ms, a, c), CUDA_ERROR_INVALID_VALUE);  // its capture is over
  CUgraphExec ge;
  CHECK_EQ(cuGraphInstantiateWithFlags(&ge, g, 0), CUDA_SUCCESS);
  CHECK_EQ(cuEventRecord(a, s), CUDA_SUCCESS);
  CHECK_EQ(cuGraphLaunch(ge, s), CUDA_SUCCESS);
  CHECK_EQ(cuEventRecord(c, s), CUDA_SUCCESS);  // recorded again outside a capture: valid again
  CHECK_EQ(cuEventElapsedTime_v2(&ms, a, c), CUDA_SUCCESS);
  CHECK(ms >= 20.0f);

  // --- a fault: waiting for an event behind it reveals it; then the sticky error ---
  CHECK_EQ(cuEventRecord(a, s), CUDA_SUCCESS);
  CHECK_EQ(launch(boom, s), CUDA_SUCCESS);
  CHECK_EQ(cuEventRecord(b, s), CUDA_SUCCESS);
  CHECK_EQ(cuEventElapsedTime_v2(&ms, a, b), CUDA_ERROR_ILLEGAL_ADDRESS);
  CHECK_EQ(cuEventElapsedTime_v2(&ms, a, a), CUDA_ERROR_ILLEGAL_ADDRESS);  // sticky
  CHECK_EQ(cuEventElapsedTime_v2(&ms, unrecorded, a), CUDA_ERROR_ILLEGAL_ADDRESS);
  CHECK_EQ(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
  return simtest::finish();
}
// SPDX-License-Identifier: MIT
