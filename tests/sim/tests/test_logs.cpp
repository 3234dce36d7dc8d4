// Tests the driver error log (cuLogsRegisterCallback / cuLogsUnregisterCallback): which failing calls log
// what, to whom, and when. Message texts are those of the real driver (H200, driver 580). CMakeLists.txt sets
// CUDA_SIM_FAULT=boom.
#include <cuda.h>

#include <string>
#include <vector>

#include "check.h"

extern "C" CUresult cuLaunchKernel_ptsz(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                        unsigned, unsigned, CUstream, void**, void**);

namespace {
struct Sink {
  std::vector<std::string> msgs;
  int malformed = 0;  // wrong level, no NUL at length, length != strlen
};

void collect(void* user, CUlogLevel level, char* msg, size_t length) {
  auto* sink = static_cast<Sink*>(user);
  if (level != CU_LOG_LEVEL_ERROR || !msg || msg[length] != '\0' || std::strlen(msg) != length)
    sink->malformed++;
  sink->msgs.emplace_back(msg ? msg : "");
}

// A callback that calls back into the driver: must not deadlock.
CUresult g_reentrant_result = CUDA_ERROR_UNKNOWN;
void reenter(void*, CUlogLevel, char*, size_t) {
  float ms;
  CUevent e = nullptr;
  g_reentrant_result = cuEventCreate(&e, 0);
  if (g_reentrant_result == CUDA_SUCCESS) g_reentrant_result = cuEventRecord(e, nullptr);
  if (g_reentrant_result == CUDA_SUCCESS) g_reentrant_result = cuEventElapsedTime_v2(&ms, e, e);
  if (e) cuEventDestroy_v2(e);
}

CUresult launch(CUfunction f, unsigned gx, unsigned gy, unsigned bx, unsigned by, unsigned bz,
                unsigned shmem = 0, CUstream s = nullptr) {
  return cuLaunchKernel(f, gx, gy, 1, bx, by, bz, shmem, s, nullptr, nullptr);
}

// The messages since the last call, as one string joined with '\n'.
std::string take(Sink& s) {
  std::string all;
  for (const std::string& m : s.msgs) all += (all.empty() ? "" : "\n") + m;
  s.msgs.clear();
  return all;
}
}  // namespace

// The sink received exactly `expected` (messages joined with '\n') since the last check.
#define CHECK_LOG(sink, expected)        \
  do {                                   \
    const std::string got_ = take(sink); \
    CHECK_STR(got_.c_str(), expected);   \
  } while (0)

int main() {
  Sink one, two;
  CUlogsCallbackHandle h1 = nullptr, h2 = nullptr;
  // Registration works before cuInit; the handle is optional.
  CHECK_EQ(cuLogsRegisterCallback(collect, &one, &h1), CUDA_SUCCESS);
  CHECK(h1 != nullptr);
  CHECK_EQ(cuLogsRegisterCallback(nullptr, &two, &h2), CUDA_ERROR_INVALID_VALUE);
  CHECK_LOG(one, "Returning 1 (CUDA_ERROR_INVALID_VALUE) from cuLogsRegisterCallback");
  CHECK_EQ(cuLogsUnregisterCallback(nullptr), CUDA_ERROR_INVALID_VALUE);
  CHECK_LOG(one,
            "Callback handle cannot be NULL\n"
            "Returning 1 (CUDA_ERROR_INVALID_VALUE) from cuLogsUnregisterCallback");
  void* p = nullptr;
  CUdriverProcAddressQueryResult st;
  CHECK_EQ(cuGetProcAddress_v2("cuLogsRegisterCallback", &p, 12090, 0, &st), CUDA_SUCCESS);
  CHECK(p == reinterpret_cast<void*>(&cuLogsRegisterCallback));
  CHECK_EQ(cuGetProcAddress_v2("cuLogsUnregisterCallback", &p, 13000, 0, &st), CUDA_SUCCESS);
  CHECK(p == reinterpret_cast<void*>(&cuLogsUnregisterCallback));
  CHECK_EQ(cuGetProcAddress_v2("cuLogsRegisterCallback", &p, 12080, 0, &st), CUDA_ERROR_NOT_FOUND);

  CHECK_EQ(cuInit(0), CUDA_SUCCESS);
  CHECK_EQ(cuLogsRegisterCallback(collect, &two, &h2), CUDA_SUCCESS);
  CUlibrary l;
  CHECK_EQ(cuLibraryLoadData(&l, "image", nullptr, nullptr, 0, nullptr, nullptr, 0), CUDA_SUCCESS);
  CUkernel k;
  CHECK_EQ(cuLibraryGetKernel(&k, l, "_Z7stencilPfix"), CUDA_SUCCESS);
  CUfunction f = reinterpret_cast<CUfunction>(k);
  CUkernel kb;
  CHECK_EQ(cuLibraryGetKernel(&kb, l, "_Z4boomv"), CUDA_SUCCESS);
  CUfunction boom = reinterpret_cast<CUfunction>(kb);

  // --- successful launches log nothing ---
  CHECK_EQ(launch(f, 1, 1, 1024, 1, 1), CUDA_SUCCESS);
  CHECK_EQ(launch(f, 65535, 65535, 32, 32, 1, 232448), CUDA_SUCCESS);
  CHECK_LOG(one, "");
  CHECK_LOG(two, "");

  // --- invalid configurations: every callback gets the explanation, then the result, with its user pointer
  // ---
  CHECK_EQ(launch(f, 1, 1, 2048, 1, 1), CUDA_ERROR_INVALID_VALUE);
  const char* const block2048 =
      "One or more of block dimensions of (2048,1,1) exceeds correspsonding maximum value of (1024,1024,64)\n"
      "Returning 1 (CUDA_ERROR_INVALID_VALUE) from cuLaunchKernel";
  CHECK_LOG(one, block2048);
  CHECK_LOG(two, block2048);
  CHECK_EQ(launch(f, 1, 1, 32, 32, 2), CUDA_ERROR_INVALID_VALUE);
  CHECK_LOG(one,
            "Requested block size of 2048 threads exceeds device maximum 1024\n"
            "Returning 1 (CUDA_ERROR_INVALID_VALUE) from cuLaunchKernel");
  CHECK_EQ(launch(f, 1, 1, 1, 1, 65), CUDA_ERROR_INVALID_VALUE);
  CHECK_LOG(
      one,
      "One or more of block dimensions of (1,1,65) exceeds correspsonding maximum value of (1024,1024,64)\n"
      "Returning 1 (CUDA_ERROR_INVALID_VALUE) from cuLaunchKernel");
  CHECK_EQ(launch(f, 0, 0, 0, 1, 1), CUDA_ERROR_INVALID_VALUE);  // block checks come first
  CHECK_LOG(one,
            "Block dimensions (0,1,1) include one or more zero values. All dimensions must be nonzero\n"
            "Returning 1 (CUDA_ERROR_INVALID_VALUE) from cuLaunchKernel");
  CHECK_EQ(launch(f, 0, 1, 32, 1, 1), CUDA_ERROR_INVALID_VALUE);
  CHECK_LOG(one,
            "Grid Dimension X must be nonzero\n"
            "Returning 1 (CUDA_ERROR_INVALID_VALUE) from cuLaunchKernel");
  CHECK_EQ(launch(f, 1, 65536, 32, 1, 1), CUDA_ERROR_INVALID_VALUE);
  CHECK_LOG(one,
            "Grid Dimension Y of 65536 exceeds maximum value of 65535\n"
            "Returning 1 (CUDA_ERROR_INVALID_VALUE) from cuLaunchKernel");
  CHECK_EQ(launch(f, 1, 1, 32, 1, 1, 300000), CUDA_ERROR_INVALID_VALUE);
  CHECK_LOG(
      one,
      "Requested dynamic shared memory size of 300000 bytes exceeds maximum dynamic shared memory size of "
      "232448 bytes\n"
      "Returning 1 (CUDA_ERROR_INVALID_VALUE) from cuLaunchKernel");
  // The entry point named is the one called.
  CHECK_EQ(cuLaunchKernel_ptsz(f, 1, 1, 1, 2048, 1, 1, 0, nullptr, nullptr, nullptr),
           CUDA_ERROR_INVALID_VALUE);
  CHECK_LOG(
      one,
      "One or more of block dimensions of (2048,1,1) exceeds correspsonding maximum value of (1024,1024,64)\n"
      "Returning 1 (CUDA_ERROR_INVALID_VALUE) from cuLaunchKernel_ptsz");
  CUlaunchConfig cfg{};
  cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = 2048;
  cfg.blockDimY = cfg.blockDimZ = 1;
  CHECK_EQ(cuLaunchKernelEx(&cfg, f, nullptr, nullptr), CUDA_ERROR_INVALID_VALUE);
  CHECK_LOG(
      one,
      "One or more of block dimensions of (2048,1,1) exceeds correspsonding maximum value of (1024,1024,64)\n"
      "Returning 1 (CUDA_ERROR_INVALID_VALUE) from cuLaunchKernelEx");
  CHECK_EQ(cuLaunchCooperativeKernel(f, 100000, 1, 1, 1024, 1, 1, 0, nullptr, nullptr),
           CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
  CHECK_LOG(one,
            "Requested cooperative grid dimensions (100000,1,1) exceed occupancy limit for this kernel on "
            "this device "
            "of 264 blocks\n"
            "Returning 720 (CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE) from cuLaunchCooperativeKernel");

  // --- invalid handles: only the result is logged ---
  int not_a_kernel = 0;
  CHECK_EQ(launch(reinterpret_cast<CUfunction>(&not_a_kernel), 1, 1, 32, 1, 1), CUDA_ERROR_INVALID_HANDLE);
  CHECK_LOG(one, "Returning 400 (CUDA_ERROR_INVALID_HANDLE) from cuLaunchKernel");
  CHECK_EQ(launch(nullptr, 1, 1, 2048, 1, 1), CUDA_ERROR_INVALID_HANDLE);  // the handle is checked first
  CHECK_LOG(one, "Returning 400 (CUDA_ERROR_INVALID_HANDLE) from cuLaunchKernel");
  CUstream s;
  CHECK_EQ(cuStreamCreate(&s, 0), CUDA_SUCCESS);
  CHECK_EQ(cuStreamDestroy_v2(s), CUDA_SUCCESS);
  CHECK_EQ(launch(f, 1, 1, 32, 1, 1, 0, s), CUDA_ERROR_INVALID_HANDLE);
  CHECK_LOG(one, "Returning 400 (CUDA_ERROR_INVALID_HANDLE) from cuLaunchKernel");
  CUevent e;
  float ms;
  CHECK_EQ(cuEventCreate(&e, 0), CUDA_SUCCESS);
  CHECK_EQ(cuEventElapsedTime_v2(&ms, e, e), CUDA_ERROR_INVALID_HANDLE);  // never recorded
  CHECK_LOG(one, "Returning 400 (CUDA_ERROR_INVALID_HANDLE) from cuEventElapsedTime_v2");
  CHECK_EQ(cuEventElapsedTime_v2(&ms, nullptr, e), CUDA_ERROR_INVALID_HANDLE);
  CHECK_LOG(one,
            "Event handle is NULL\nReturning 400 (CUDA_ERROR_INVALID_HANDLE) from cuEventElapsedTime_v2");
  take(two);

  // --- after unregistering, a callback gets nothing; the others still do ---
  CHECK_EQ(cuLogsUnregisterCallback(h2), CUDA_SUCCESS);
  CHECK_EQ(launch(f, 1, 1, 2048, 1, 1), CUDA_ERROR_INVALID_VALUE);
  CHECK_LOG(two, "");
  CHECK_LOG(one, block2048);
  CHECK_EQ(cuLogsUnregisterCallback(h2), CUDA_ERROR_INVALID_VALUE);  // stale (the real driver crashes)
  CHECK_LOG(one, "Returning 1 (CUDA_ERROR_INVALID_VALUE) from cuLogsUnregisterCallback");

  // --- a callback may call the driver ---
  CUlogsCallbackHandle h3 = nullptr;
  CHECK_EQ(cuLogsRegisterCallback(reenter, nullptr, &h3), CUDA_SUCCESS);
  CHECK_EQ(launch(f, 1, 1, 2048, 1, 1), CUDA_ERROR_INVALID_VALUE);
  CHECK_EQ(g_reentrant_result, CUDA_SUCCESS);
  CHECK_EQ(cuLogsUnregisterCallback(h3), CUDA_SUCCESS);
  CHECK_LOG(one, block2048);

  // --- a device fault is not explained; calls that then return the sticky error say so ---
  CHECK_EQ(launch(boom, 1, 1, 32, 1, 1), CUDA_SUCCESS);
  CHECK_LOG(one, "");
  CHECK_EQ(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
  take(one);  // (not modelled: the real driver logs the sticky error here too)
  CHECK_EQ(launch(f, 1, 1, 32, 1, 1), CUDA_ERROR_ILLEGAL_ADDRESS);
  CHECK_LOG(one, "Sticky error detected\nReturning 700 (CUDA_ERROR_ILLEGAL_ADDRESS) from cuLaunchKernel");

  // --- with every callback unregistered, nothing is delivered ---
  CHECK_EQ(cuLogsUnregisterCallback(h1), CUDA_SUCCESS);
  CHECK_EQ(launch(f, 1, 1, 2048, 1, 1), CUDA_ERROR_ILLEGAL_ADDRESS);
  CHECK_LOG(one, "");
  CHECK_EQ(one.malformed, 0);
  CHECK_EQ(two.malformed, 0);
  return simtest::finish();
}
// SPDX-License-Identifier: MIT
