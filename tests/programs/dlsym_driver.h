// How the test programs that link no CUDA library reach the driver, as CuPy and Triton do: dlopen the driver
// and find each function with dlsym on its handle, typed by its declaration in cuda.h (the types only:
// nothing is linked). Shared by driver_app, dlclose_app and tests/reliability/many_kernels.
//
// A program lists the driver functions it calls as rows X(member, function) and declares its table of typed
// pointers with DLSYM_DRIVER_TABLE; `function` must be the exported name that cuda.h compiles calls to
// (cuMemAlloc_v2, not cuda.h's cuMemAlloc macro), since dlsym is asked for exactly that text:
//   #define MY_DRIVER_FUNCTIONS(X) DLSYM_DRIVER_SETUP_FUNCTIONS(X) X(launch_kernel, cuLaunchKernel)
//   DLSYM_DRIVER_TABLE(Driver, MY_DRIVER_FUNCTIONS)
//   void* libcuda = dlsym_driver::open_libcuda();
//   Driver cu;
//   if (!libcuda || !cu.find(libcuda)) return 1;
//   cu.init(0);
#pragma once

#include <cuda.h>
#include <dlfcn.h>

#include <cstdio>

namespace dlsym_driver {

// The driver, opened as a plug-in host opens it (RTLD_LOCAL: its names stay out of the global scope); says
// so on stdout when there is none.
inline void* open_libcuda() {
  void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!handle) std::printf("dlopen libcuda.so.1 failed\n");
  return handle;
}

// One driver function, found with dlsym on the driver's handle; says so on stdout when it is missing.
template <typename Function>
bool find(void* handle, const char* name, Function* out) {
  *out = reinterpret_cast<Function>(dlsym(handle, name));
  if (!*out) std::printf("dlsym %s: not found\n", name);
  return *out != nullptr;
}

}  // namespace dlsym_driver

// struct `name`: a typed pointer per row of ROWS, null until found, and find(handle), which looks them up in
// the order of the rows and stops at the first one missing.
#define DLSYM_DRIVER_TABLE(name, ROWS)                               \
  struct name {                                                      \
    ROWS(DLSYM_DRIVER_MEMBER)                                        \
    bool find(void* handle) { return true ROWS(DLSYM_DRIVER_FIND); } \
  };
#define DLSYM_DRIVER_MEMBER(member, function) decltype(&::function) member = nullptr;
#define DLSYM_DRIVER_FIND(member, function) &&::dlsym_driver::find(handle, #function, &member)

// The rows every one of these programs starts with: what it takes to make the primary context current and get
// a kernel from a module, as CuPy and Triton do before their first launch.
#define DLSYM_DRIVER_SETUP_FUNCTIONS(X)           \
  X(init, cuInit)                                 \
  X(device_get, cuDeviceGet)                      \
  X(primary_ctx_retain, cuDevicePrimaryCtxRetain) \
  X(ctx_set_current, cuCtxSetCurrent)             \
  X(module_load_data, cuModuleLoadData)           \
  X(module_get_function, cuModuleGetFunction)
// SPDX-License-Identifier: MIT
