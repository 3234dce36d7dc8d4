// A CUDA program whose launches come from known source lines, for the call-site tests: each launcher is a
// noinline function, and the line of its launch carries a marker comment that the test looks up (so the
// test never hard-codes a line number). Built with -g, against the simulated runtime, shared
// (callsite_app) and static (callsite_app_static: the runtime's frames are then inside the program).
//
//   callsite_app blocked | config | suspects
//
// The launch is written out as nvcc generates it for `stencil<<<grid, block, 0, stream>>>()`: the call
// configuration is pushed at the call site, and the kernel's `__device_stub__` pops it and launches
// (nvcc puts that stub in <file>.cudafe1.stub.c).
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "sim_kernels.h"

SIM_KERNEL(fill, "_Z4fillPfif");
SIM_KERNEL(stencil, "_Z7stencilPfPKfix");

// nvcc makes its stubs static; this one is exported (the program is linked with -rdynamic) so that without
// libdw, where only dynamic symbols name frames, it is still recognized by its name when the compiler did not
// inline it (sanitizer builds).
extern "C" cudaError_t __device_stub__Z7stencilPfPKfix() {
  dim3 grid, block;
  size_t shared_memory = 0;
  cudaStream_t stream = nullptr;
  if (cudaError_t error = __cudaPopCallConfiguration(&grid, &block, &shared_memory, &stream)) return error;
  cudaKernel_t kernel = nullptr;
  if (cudaError_t error = __cudaGetKernel(&kernel, reinterpret_cast<const void*>(&stencil))) return error;
  void* args[1] = {nullptr};
  return __cudaLaunchKernel(kernel, grid, block, args, shared_memory, stream);
}

extern "C" __attribute__((noinline)) cudaError_t launch_stencil(cudaStream_t stream, dim3 block) {
  if (__cudaPushCallConfiguration(dim3(64), block, 0, stream) != 0) return cudaErrorMissingConfiguration;
  cudaError_t result = __device_stub__Z7stencilPfPKfix();  // CALLSITE_STENCIL
  asm volatile("");  // keeps the call a call (no tail call), as in real code that checks the result
  return result;
}

extern "C" __attribute__((noinline)) cudaError_t launch_fill(cudaStream_t stream) {
  cudaError_t result = sim::launch(fill, dim3(64), dim3(128), stream);  // CALLSITE_FILL
  asm volatile("");
  return result;
}

// The launchers are exported (the program is linked with -rdynamic), so that without libdw their names
// still come from the dynamic symbol table.
static int report(const char* what, int result) {
  if (result != 0) std::printf("%s returned %d\n", what, result);
  return result;
}

int main(int argc, char** argv) {
  std::string scenario = argc > 1 ? argv[1] : "blocked";
  if (scenario == "blocked" || scenario == "suspects") {
    for (int i = 0; i < 3; ++i) {
      report("fill", launch_fill(nullptr));
      report("stencil", launch_stencil(nullptr, dim3(128)));
    }
    report("cudaDeviceSynchronize", cudaDeviceSynchronize());
  } else if (scenario == "config") {
    report("fill", launch_fill(nullptr));
    report("stencil", launch_stencil(nullptr, dim3(2048)));  // over 1024 threads per block
  } else {
    std::fprintf(stderr, "unknown scenario %s\n", scenario.c_str());
    return 2;
  }
  std::printf("done\n");
  return 0;
}
// SPDX-License-Identifier: MIT
