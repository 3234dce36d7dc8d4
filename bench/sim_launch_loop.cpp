// Benchmark workload on the simulated CUDA stack: N launches of three kernels in turn, timed on the
// host. Prints nanoseconds per launch. Used by bench/run_policy_cost.sh to price the policy.
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "sim_kernels.h"

SIM_KERNEL(fill, "_Z4fillPfif");
SIM_KERNEL(stencil, "_Z7stencilPfPKfix");
SIM_KERNEL(scale, "_Z5scalePfif");

int main(int argc, char** argv) {
  int launches = argc > 1 ? std::atoi(argv[1]) : 200000;
  sim::Stub kernels[] = {fill, stencil, scale};
  for (int i = 0; i < 3000; ++i) sim::launch(kernels[i % 3], dim3(4096), dim3(256), nullptr);  // warm-up
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < launches; ++i) sim::launch(kernels[i % 3], dim3(4096), dim3(256), nullptr);
  cudaDeviceSynchronize();
  auto stop = std::chrono::steady_clock::now();
  std::printf("%.1f\n", std::chrono::duration<double, std::nano>(stop - start).count() / launches);
  return 0;
}
// SPDX-License-Identifier: MIT
