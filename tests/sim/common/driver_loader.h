// Finds the CUDA driver the way NVIDIA's runtime and math libraries do; shared by the simulated cudart and
// cuBLAS.
//
// Each library that includes this header gets its own private copy (everything is in an anonymous namespace),
// just as every real CUDA library carries its own static runtime. The sequence matters to cuda-blockrun,
// which must see launches whichever door they use:
//   dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL)          (found via LD_LIBRARY_PATH / rpath)
//   dlsym(handle, "cuGetProcAddress_v2")
//   cuGetProcAddress_v2("cuGetProcAddress")                  (the self-lookup: from then on use what it
//   returned) every other driver function through that fetched pointer (cudaVersion 13000; flags 0, or
//   CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM for the _ptsz flavours).
#pragma once

#include <cuda.h>
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>

// The CUDA version of the library being built (13000; a copy built to play a CUDA 12.x runtime sets it).
#ifndef SIM_CUDART_VERSION
#define SIM_CUDART_VERSION 13000
#endif

namespace {

class DriverLoader {
 public:
  static constexpr int kCudaVersion = SIM_CUDART_VERSION;

  // Opens the driver and performs the self-lookup. Returns false if no usable driver was found.
  bool open() {
    // CUDA_SIM_NO_DRIVER=1: no libcuda.so.1 is found, as on a machine where no driver is installed (a laptop,
    // a login node), whatever the library path holds.
    if (const char* absent = std::getenv("CUDA_SIM_NO_DRIVER"); absent && std::strcmp(absent, "1") == 0)
      return false;
    handle_ = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!handle_) return false;
    using GetProc = decltype(&cuGetProcAddress_v2);
    auto bootstrap = reinterpret_cast<GetProc>(dlsym(handle_, "cuGetProcAddress_v2"));
    if (!bootstrap) return false;
    void* self = nullptr;
    CUdriverProcAddressQueryResult st;
    if (bootstrap("cuGetProcAddress", &self, kCudaVersion, CU_GET_PROC_ADDRESS_DEFAULT, &st) !=
            CUDA_SUCCESS ||
        !self)
      return false;
    get_proc_ = reinterpret_cast<GetProc>(self);
    return true;
  }

  void* handle() const { return handle_; }

  // Fetches one driver entry point through the self-looked-up cuGetProcAddress.
  template <class Fn>
  bool get(const char* name, Fn* out, bool per_thread = false) {
    void* p = nullptr;
    CUdriverProcAddressQueryResult st;
    const cuuint64_t flags =
        per_thread ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : CU_GET_PROC_ADDRESS_DEFAULT;
    if (get_proc_(name, &p, kCudaVersion, flags, &st) != CUDA_SUCCESS || !p) return false;
    *out = reinterpret_cast<Fn>(p);
    return true;
  }

 private:
  void* handle_ = nullptr;
  decltype(&cuGetProcAddress_v2) get_proc_ = nullptr;
};

}  // namespace
// SPDX-License-Identifier: MIT
