// Tests the simulated driver's entry-point lookup (cuGetProcAddress), handle kinds and names, launch
// validation, memory checks and error strings.
#include <cuda.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstring>

#include "check.h"

#undef cuGetProcAddress
extern "C" CUresult cuGetProcAddress(const char*, void**, int, cuuint64_t);  // legacy 4-argument form
// Per-thread flavours are only declared by cuda.h under CUDA_API_PER_THREAD_DEFAULT_STREAM.
extern "C" CUresult cuLaunchKernel_ptsz(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                        unsigned, unsigned, CUstream, void**, void**);
extern "C" CUresult cuMemcpyDtoH_v2_ptds(void*, CUdeviceptr, size_t);

namespace {
int g_calls = 0;
void host_fn(void*) {
  ++g_calls;
}
}  // namespace

int main() {
  int n = 0;
  CHECK_EQ(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);  // before cuInit, like the real driver

  // --- cuGetProcAddress, reached the way the runtime and cuBLAS do ---
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  CHECK(lib != nullptr);
  using GetProc = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
  auto boot = reinterpret_cast<GetProc>(dlsym(lib, "cuGetProcAddress_v2"));
  CHECK(boot != nullptr);
  void* self = nullptr;
  CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  CHECK_EQ(boot("cuGetProcAddress", &self, 13000, 0, &st), CUDA_SUCCESS);
  CHECK_EQ(st, CU_GET_PROC_ADDRESS_SUCCESS);
  CHECK(self == reinterpret_cast<void*>(boot));  // the self-lookup answers with itself
  auto gp = reinterpret_cast<GetProc>(self);
  void* p = nullptr;
  CHECK_EQ(gp("cuGetProcAddress", &p, 11030, 0, &st), CUDA_SUCCESS);
  CHECK(p == dlsym(lib, "cuGetProcAddress"));  // older versions get the 4-argument form
  CHECK_EQ(gp("cuLaunchKernel", &p, 13000, 0, &st), CUDA_SUCCESS);
  CHECK(p == dlsym(lib, "cuLaunchKernel"));
  CHECK_EQ(gp("cuLaunchKernel", &p, 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st), CUDA_SUCCESS);
  CHECK(p == dlsym(lib, "cuLaunchKernel_ptsz"));
  CHECK_EQ(gp("cuStreamSynchronize", &p, 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st),
           CUDA_SUCCESS);
  CHECK(p == dlsym(lib, "cuStreamSynchronize_ptsz"));
  CHECK_EQ(gp("cuMemcpyHtoD", &p, 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st), CUDA_SUCCESS);
  CHECK(p == dlsym(lib, "cuMemcpyHtoD_v2_ptds"));
  CHECK_EQ(gp("cuMemAlloc", &p, 13000, 0, &st), CUDA_SUCCESS);
  CHECK(p == dlsym(lib, "cuMemAlloc_v2"));
  CHECK_EQ(gp("cuStreamBeginCapture", &p, 13000, 0, &st), CUDA_SUCCESS);
  CHECK(p == dlsym(lib, "cuStreamBeginCapture_v2"));
  CHECK_EQ(gp("cuStreamWriteValue64", &p, 13000, 0, &st), CUDA_SUCCESS);
  CHECK(p == dlsym(lib, "cuStreamWriteValue64_v2"));
  CHECK_EQ(gp("cuCtxSynchronize", &p, 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st),
           CUDA_SUCCESS);
  CHECK(p == dlsym(lib, "cuCtxSynchronize_v2"));  // CUDA 13's flavour; no per-thread one
  CHECK_EQ(gp("cuCtxSynchronize", &p, 12080, 0, &st), CUDA_SUCCESS);
  CHECK(p == dlsym(lib, "cuCtxSynchronize"));
  p = reinterpret_cast<void*>(1);
  CHECK_EQ(gp("cuLaunchKernelEx", &p, 11000, 0, &st), CUDA_ERROR_NOT_FOUND);
  CHECK_EQ(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  CHECK(p == nullptr);
  p = reinterpret_cast<void*>(1);
  CHECK_EQ(gp("cuNoSuchFunction", &p, 13000, 0, &st), CUDA_ERROR_NOT_FOUND);
  CHECK_EQ(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  CHECK(p == nullptr);
  CHECK_EQ(cuGetProcAddress("cuLaunchKernelEx", &p, 13000, 0), CUDA_SUCCESS);
  CHECK(p == dlsym(lib, "cuLaunchKernelEx"));

  // --- device ---
  CHECK_EQ(cuInit(0), CUDA_SUCCESS);
  CHECK_EQ(cuDeviceGetCount(&n), CUDA_SUCCESS);
  CHECK_EQ(n, 1);
  CUdevice dev;
  CHECK_EQ(cuDeviceGet(&dev, 0), CUDA_SUCCESS);
  char name[128];
  CHECK_EQ(cuDeviceGetName(name, sizeof name, dev), CUDA_SUCCESS);
  CHECK_STR(name, "Simulated CUDA device (cuda-blockrun test double)");
  int v = 0;
  CHECK_EQ(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, dev), CUDA_SUCCESS);
  CHECK_EQ(v, 1);
  CHECK_EQ(cuDriverGetVersion(&v), CUDA_SUCCESS);
  CHECK_EQ(v, 13000);
  CUcontext ctx, cur = nullptr;
  CHECK_EQ(cuDevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS);
  CHECK_EQ(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
  CHECK_EQ(cuCtxGetCurrent(&cur), CUDA_SUCCESS);
  CHECK(cur == ctx);

  // --- handles: CUkernel (runtime) vs CUfunction (module API) ---
  CUlibrary l;
  CHECK_EQ(cuLibraryLoadData(&l, "image", nullptr, nullptr, 0, nullptr, nullptr, 0), CUDA_SUCCESS);
  CUkernel k;
  CHECK_EQ(cuLibraryGetKernel(&k, l, "_Z7stencilPfix"), CUDA_SUCCESS);
  const char* kn = nullptr;
  CHECK_EQ(cuKernelGetName(&kn, k), CUDA_SUCCESS);
  CHECK_STR(kn, "_Z7stencilPfix");
  CHECK_EQ(cuFuncGetName(&kn, reinterpret_cast<CUfunction>(k)), CUDA_ERROR_INVALID_HANDLE);
  CUmodule mod;
  CHECK_EQ(cuModuleLoadData(&mod, "image"), CUDA_SUCCESS);
  CUfunction f;
  CHECK_EQ(cuModuleGetFunction(&f, mod, "_Z3fooi"), CUDA_SUCCESS);
  CHECK_EQ(cuFuncGetName(&kn, f), CUDA_SUCCESS);
  CHECK_STR(kn, "_Z3fooi");
  CHECK_EQ(cuKernelGetName(&kn, reinterpret_cast<CUkernel>(f)), CUDA_ERROR_INVALID_HANDLE);
  CUfunction kf;
  CHECK_EQ(cuKernelGetFunction(&kf, k), CUDA_SUCCESS);
  CHECK_EQ(cuFuncGetName(&kn, kf), CUDA_SUCCESS);
  CHECK_STR(kn, "_Z7stencilPfix");

  // --- launches: both kinds accepted; invalid configurations fail at once ---
  CHECK_EQ(cuLaunchKernel(reinterpret_cast<CUfunction>(k), 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr),
           CUDA_SUCCESS);
  CHECK_EQ(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, CU_STREAM_PER_THREAD, nullptr, nullptr), CUDA_SUCCESS);
  CHECK_EQ(cuLaunchKernel_ptsz(f, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr), CUDA_SUCCESS);
  CUlaunchConfig cfg{};
  cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = 256;
  cfg.blockDimY = cfg.blockDimZ = 1;
  CHECK_EQ(cuLaunchKernelEx(&cfg, f, nullptr, nullptr), CUDA_SUCCESS);
  cfg.blockDimX = 2048;
  CHECK_EQ(cuLaunchKernelEx(&cfg, f, nullptr, nullptr), CUDA_ERROR_INVALID_VALUE);
  CHECK_EQ(cuLaunchKernel(f, 0, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr), CUDA_ERROR_INVALID_VALUE);
  CHECK_EQ(cuLaunchKernel(f, 1, 1, 1, 1, 1, 65, 0, nullptr, nullptr, nullptr), CUDA_ERROR_INVALID_VALUE);
  CHECK_EQ(cuLaunchKernel(reinterpret_cast<CUfunction>(&n), 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr),
           CUDA_ERROR_INVALID_HANDLE);
  CHECK_EQ(cuLaunchHostFunc(nullptr, host_fn, nullptr), CUDA_SUCCESS);
  CHECK_EQ(g_calls, 1);
  CHECK_EQ(cuStreamQuery(nullptr), CUDA_SUCCESS);
  CHECK_EQ(cuCtxSynchronize(), CUDA_SUCCESS);

  // --- memory ---
  CUdeviceptr d;
  CHECK_EQ(cuMemAlloc_v2(&d, 16 * sizeof(uint32_t)), CUDA_SUCCESS);
  CHECK_EQ(cuMemsetD32_v2(d, 0xabcdef01u, 16), CUDA_SUCCESS);
  uint32_t h[16] = {};
  CHECK_EQ(cuMemcpyDtoH_v2(h, d, sizeof h), CUDA_SUCCESS);
  CHECK_EQ(h[15], 0xabcdef01u);
  CHECK_EQ(cuMemcpyHtoD_v2(reinterpret_cast<CUdeviceptr>(h), h, sizeof h), CUDA_ERROR_INVALID_VALUE);
  CHECK_EQ(cuMemsetD8_v2(d, 0, 16 * sizeof(uint32_t) + 1), CUDA_ERROR_INVALID_VALUE);
  CHECK_EQ(cuMemsetD32Async(d, 7, 16, nullptr), CUDA_SUCCESS);
  CHECK_EQ(cuMemcpyDtoH_v2_ptds(h, d, sizeof h), CUDA_SUCCESS);
  CHECK_EQ(h[0], 7u);
  uint64_t* host = nullptr;
  CHECK_EQ(cuMemHostAlloc(reinterpret_cast<void**>(&host), 8, CU_MEMHOSTALLOC_DEVICEMAP), CUDA_SUCCESS);
  CUdeviceptr dh;
  CHECK_EQ(cuMemHostGetDevicePointer_v2(&dh, host, 0), CUDA_SUCCESS);
  CHECK_EQ(cuStreamWriteValue64_v2(nullptr, dh, 77, 0), CUDA_SUCCESS);
  CHECK_EQ(*host, 77u);
  CHECK_EQ(cuMemFree_v2(d), CUDA_SUCCESS);
  CHECK_EQ(cuMemFree_v2(d), CUDA_ERROR_INVALID_VALUE);

  // --- error strings ---
  const char* s = nullptr;
  CHECK_EQ(cuGetErrorName(CUDA_ERROR_ILLEGAL_ADDRESS, &s), CUDA_SUCCESS);
  CHECK_STR(s, "CUDA_ERROR_ILLEGAL_ADDRESS");
  CHECK_EQ(cuGetErrorString(CUDA_ERROR_ILLEGAL_ADDRESS, &s), CUDA_SUCCESS);
  CHECK_STR(s, "an illegal memory access was encountered");
  CHECK_EQ(cuGetErrorString(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, &s), CUDA_SUCCESS);
  CHECK_STR(s, "operation not permitted when stream is capturing");
  CHECK_EQ(cuGetErrorName(CUDA_ERROR_INVALID_HANDLE, &s), CUDA_SUCCESS);
  CHECK_STR(s, "CUDA_ERROR_INVALID_HANDLE");
  CHECK_EQ(cuGetErrorName(static_cast<CUresult>(12345), &s), CUDA_ERROR_INVALID_VALUE);
  return simtest::finish();
}
// SPDX-License-Identifier: MIT
