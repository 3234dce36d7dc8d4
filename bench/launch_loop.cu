// Benchmark workload: an empty kernel launched N times on the default stream, timed on the host
// from the first launch to the completion of the last (synchronized), after a warm-up. Prints
// "BENCH empty_launch <mean microseconds per launch> us" for bench/harness.py. Built twice: with
// -cudart shared (the runtime hooks see it) and with nvcc's default static runtime (only the driver's).
//   launch_loop [launches=200000]
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

__global__ void empty_kernel() {}

int main(int argc, char** argv) {
  int launches = argc > 1 ? std::atoi(argv[1]) : 200000;
  for (int i = 0; i < 1000; ++i) empty_kernel<<<1, 32>>>();  // warm-up: module load, first-sight naming
  if (cudaDeviceSynchronize() != cudaSuccess) return 1;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < launches; ++i) empty_kernel<<<1, 32>>>();
  cudaError_t error = cudaDeviceSynchronize();
  auto stop = std::chrono::steady_clock::now();
  if (error != cudaSuccess) return 1;
  double us = std::chrono::duration<double, std::micro>(stop - start).count() / launches;
  std::printf("BENCH empty_launch %.4f us\n", us);
  return 0;
}
// SPDX-License-Identifier: MIT
