// Many host threads launching at once on the simulated stack: THREADS threads, each LAUNCHES launches
// spread over 16 streams (two per thread), then a device synchronize. Prints the launches it made.
//   threads_app [threads] [launches-per-thread]
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "sim_kernels.h"

SIM_KERNEL(fill, "_Z4fillPfif");
SIM_KERNEL(stencil, "_Z7stencilPfPKfix");
SIM_KERNEL(scale, "_Z5scalePfif");

int main(int argc, char** argv) {
  int threads = argc > 1 ? std::atoi(argv[1]) : 8;
  int launches = argc > 2 ? std::atoi(argv[2]) : 100000;
  std::vector<cudaStream_t> streams(16);
  for (cudaStream_t& stream : streams) cudaStreamCreate(&stream);
  std::vector<std::thread> workers;
  std::vector<int> failures(threads, 0);
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      sim::Stub kernels[] = {fill, stencil, scale};
      for (int i = 0; i < launches; ++i) {
        cudaStream_t stream = streams[(2 * t + i % 2) % streams.size()];
        if (sim::launch(kernels[i % 3], dim3(64), dim3(128), stream) != cudaSuccess) ++failures[t];
      }
    });
  }
  for (std::thread& worker : workers) worker.join();
  int failed = 0;
  for (int f : failures) failed += f;
  cudaError_t sync = cudaDeviceSynchronize();
  std::printf("%d launches, %d failed, cudaDeviceSynchronize returned %d\n", threads * launches, failed,
              sync);
  return failed == 0 && sync == cudaSuccess ? 0 : 1;
}
// SPDX-License-Identifier: MIT
