// Lets plain C++ test programs (built by g++, no nvcc) declare and launch "kernels" the way nvcc-generated
// code does, against the simulated (or any) CUDA 13 runtime.
//
//   SIM_KERNEL(stencil, "_Z7stencilPfix");               // host stub `void stencil()`, registered at static
//   init cudaError_t e = sim::launch(stencil, grid, block, stream);       // like stencil<<<grid, block, 0,
//   stream>>>() cudaError_t e = sim::launch_ptsz(stencil, grid, block, stream);  // same, built with
//   --default-stream per-thread cudaLaunchKernel((const void*)stencil, grid, block, args, 0, stream);  // the
//   stub is a valid host function too
//
// Registration uses the nvcc ABI of crt/host_runtime.h: __cudaRegisterFatBinary, __cudaRegisterFunction (with
// the mangled device name), __cudaRegisterFatBinaryEnd. A launch is what CUDA 13's <<<>>> expands to:
// __cudaPushCallConfiguration, then in the stub __cudaPopCallConfiguration, __cudaGetKernel and
// __cudaLaunchKernel (or __cudaLaunchKernel_ptsz). The sim driver never runs device code, so the stub has no
// parameters and the kernel gets an empty argument list; faults come from CUDA_SIM_FAULT (see README.md).
#pragma once

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstddef>

extern "C" {
// Declared here because crt/host_runtime.h only compiles under nvcc; signatures are identical.
void** __cudaRegisterFatBinary(void* fatCubin);
void __cudaRegisterFatBinaryEnd(void** fatCubinHandle);
void __cudaRegisterFunction(void** fatCubinHandle, const char* hostFun, char* deviceFun,
                            const char* deviceName, int thread_limit, uint3* tid, uint3* bid, dim3* bDim,
                            dim3* gDim, int* wSize);
unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
                                     struct CUstream_st* stream);
cudaError_t __cudaPopCallConfiguration(dim3* gridDim, dim3* blockDim, size_t* sharedMem, void* stream);
cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* hostFun);
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args,
                               size_t sharedMem, cudaStream_t stream);
cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void** args,
                                    size_t sharedMem, cudaStream_t stream);

// Exported by the simulated libcuda.so.1: writes the CUDA_SIM_STATS file now (it is also written at exit).
// Weak, so that programs which only reach the driver through the runtime (no link to libcuda) still link;
// call sim::write_stats(), which finds it at run time.
__attribute__((weak)) void simWriteStats(void);
}

namespace sim {

using Stub = void (*)();

namespace detail {

// Stands in for nvcc's __fatDeviceText wrapper (__fatBinC_Wrapper_t); the sim runtime ignores its content.
struct FatbinWrapper {
  int magic;
  int version;
  const unsigned long long* data;
  void* filename_or_fatbins;
};

struct Registrar {
  Registrar(Stub stub, const char* mangled) {
    static const unsigned long long empty_image[2] = {0, 0};
    static FatbinWrapper wrapper = {0x466243b1, 1, empty_image, nullptr};
    void** handle = __cudaRegisterFatBinary(&wrapper);
    __cudaRegisterFunction(handle, reinterpret_cast<const char*>(stub), const_cast<char*>(mangled), mangled,
                           -1, nullptr, nullptr, nullptr, nullptr, nullptr);
    __cudaRegisterFatBinaryEnd(handle);
  }
};

}  // namespace detail

// Writes the statistics file of the simulated driver, wherever it was loaded from.
inline void write_stats() {
  if (simWriteStats) {
    simWriteStats();
    return;
  }
  if (auto fn = reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "simWriteStats"))) fn();
}

}  // namespace sim

// Defines the host stub `name` and registers it under `mangled` before main() runs. The stub's body differs
// per kernel (it stores its own name) so that identical-code folding can never merge two stubs into one
// address.
#define SIM_KERNEL(name, mangled)                                         \
  void name() {                                                           \
    static const char* volatile sim_kernel_name_ __attribute__((unused)); \
    sim_kernel_name_ = mangled;                                           \
  }                                                                       \
  static ::sim::detail::Registrar sim_kernel_registrar_##name(&name, mangled)

// The launch itself, as nvcc generates it into <file>.cudafe1.stub.c (the kernel's `__device_stub__`): the
// #line makes the debug information say so, as it does for nvcc's stubs, so that the shim's call-site rules
// see these frames as CUDA's and name the caller (an inlined stub reports its own file and line otherwise).
#line 1 "sim_kernels.cudafe1.stub.c"
namespace sim {
namespace detail {

// Always inlined, whatever the optimization level (sanitizer builds too), as nvcc's stubs are at -O2: the
// return address of the runtime call is then in the launching function itself, which the tests of call sites
// rely on.
__attribute__((always_inline)) inline cudaError_t launch(Stub stub, dim3 grid, dim3 block,
                                                         cudaStream_t stream, size_t shmem, bool ptsz) {
  // <<<grid, block, shmem, stream>>> pushes the configuration; the stub pops it.
  if (__cudaPushCallConfiguration(grid, block, shmem, stream) != 0) return cudaErrorMissingConfiguration;
  dim3 g, b;
  size_t sm = 0;
  cudaStream_t s = nullptr;
  if (cudaError_t e = __cudaPopCallConfiguration(&g, &b, &sm, &s)) return e;
  cudaKernel_t k = nullptr;
  if (cudaError_t e = __cudaGetKernel(&k, reinterpret_cast<const void*>(stub))) return e;
  void* args[1] = {nullptr};
  return ptsz ? __cudaLaunchKernel_ptsz(k, g, b, args, sm, s) : __cudaLaunchKernel(k, g, b, args, sm, s);
}

}  // namespace detail

__attribute__((always_inline)) inline cudaError_t launch(Stub stub, dim3 grid, dim3 block,
                                                         cudaStream_t stream = nullptr, size_t shmem = 0) {
  return detail::launch(stub, grid, block, stream, shmem, false);
}

__attribute__((always_inline)) inline cudaError_t launch_ptsz(Stub stub, dim3 grid, dim3 block,
                                                              cudaStream_t stream = nullptr,
                                                              size_t shmem = 0) {
  return detail::launch(stub, grid, block, stream, shmem, true);
}

}  // namespace sim
// SPDX-License-Identifier: MIT
