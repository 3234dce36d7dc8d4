// The `steps` scenario of cuda_app.cpp in a program linked with the STATIC simulated runtime
// (libcudart_static.a), as nvcc links by default: its runtime entry points (__cudaLaunchKernel,
// cudaMemcpy, ...) are local to the executable, so LD_PRELOAD cannot interpose them. Only the driver
// (libcuda.so.1, which the runtime finds with dlopen + cuGetProcAddress) sees its launches.
// Built with g++ against the real CUDA headers; runs on the simulated stack
// (LD_LIBRARY_PATH=${CUDA_BLOCKRUN_SIM_LIBDIR}).
//
//   static_app [ptsz|sync]  ptsz: launch as a --default-stream per-thread build does
//   (__cudaLaunchKernel_ptsz,
//                           cudaMemcpy_ptds); sync: cudaDeviceSynchronize before the copy (CUDA 13's static
//                           runtime reaches the driver's cuCtxSynchronize_v2 for it)
//
// 20 steps of fill, stencil, scale on the default stream, checked only at the end; faults are injected
// by the test through CUDA_SIM_FAULT (e.g. stencil:13, the 13th stencil launch, launch #38).
// Prints every non-zero CUDA result as `<what> returned <code>`, then `done`.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "sim_kernels.h"

// What cudaMemcpy compiles to with --default-stream per-thread (cuda_runtime_api.h declares it only then).
extern "C" cudaError_t cudaMemcpy_ptds(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind);

SIM_KERNEL(fill, "_Z4fillPfif");
SIM_KERNEL(stencil, "_Z7stencilPfPKfix");
SIM_KERNEL(scale, "_Z5scalePfif");

namespace {

int report(const char* what, int result) {
  if (result != 0) std::printf("%s returned %d\n", what, result);
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IONBF, 0);  // output order must not depend on buffering
  const bool ptsz = argc > 1 && std::strcmp(argv[1], "ptsz") == 0;
  const bool sync = argc > 1 && std::strcmp(argv[1], "sync") == 0;
  if (argc > 1 && !ptsz && !sync) {
    std::fprintf(stderr, "static_app: unknown argument '%s' (expected: ptsz, sync or nothing)\n", argv[1]);
    return 2;
  }
  const dim3 grid(4096), block(256);
  int launch_number = 0;
  for (int step = 0; step < 20; ++step) {
    for (sim::Stub kernel : {sim::Stub(fill), sim::Stub(stencil), sim::Stub(scale)}) {
      ++launch_number;
      cudaError_t result = ptsz ? sim::launch_ptsz(kernel, grid, block) : sim::launch(kernel, grid, block);
      if (result != cudaSuccess) std::printf("launch %d returned %d\n", launch_number, result);
    }
  }
  if (sync) report("cudaDeviceSynchronize", cudaDeviceSynchronize());
  std::vector<float> host(16);
  float* device = nullptr;
  report("cudaMalloc", cudaMalloc(reinterpret_cast<void**>(&device), host.size() * sizeof(float)));
  const size_t bytes = host.size() * sizeof(float);
  int copy = ptsz ? report("cudaMemcpy", cudaMemcpy_ptds(host.data(), device, bytes, cudaMemcpyDeviceToHost))
                  : report("cudaMemcpy", cudaMemcpy(host.data(), device, bytes, cudaMemcpyDeviceToHost));
  report("cudaGetLastError", cudaGetLastError());
  std::printf("done\n");
  return copy == 0 ? 0 : 1;
}
// SPDX-License-Identifier: MIT
