// Benchmark workload: an empty kernel launched N times on the default stream, timed on the host
// from the first launch to the completion of the last (synchronized), after a warm-up. Prints
// "BENCH empty_launch <mean microseconds per launch> us" for bench/harness.py. Built twice: with
// -cudart shared (the runtime hooks see it) and with nvcc's default static runtime (only the driver's).
// Then the host's own cost of a launch: 100 bursts of 400 launches, each timed from the first launch's call
// to the last one's return (the queue never fills, so the GPU does not set the pace) and drained untimed;
// "BENCH launch_call_min" and "BENCH launch_call_median" are the fastest and the median burst. The minimum
// is what the launch path costs when nothing else on the machine gets in the way (issue 21: on the H200 the
// whole-loop figure moves by 1 us from one process to the next, more than the shim costs).
//   launch_loop [launches=200000]
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

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

  constexpr int kBursts = 100, kBurst = 400;
  std::vector<double> burst_us;
  for (int b = 0; b < kBursts; ++b) {
    auto first = std::chrono::steady_clock::now();
    for (int i = 0; i < kBurst; ++i) empty_kernel<<<1, 32>>>();
    auto last = std::chrono::steady_clock::now();
    if (cudaDeviceSynchronize() != cudaSuccess) return 1;
    burst_us.push_back(std::chrono::duration<double, std::micro>(last - first).count() / kBurst);
  }
  std::sort(burst_us.begin(), burst_us.end());
  std::printf("BENCH launch_call_min %.4f us\n", burst_us.front());
  std::printf("BENCH launch_call_median %.4f us\n", burst_us[kBursts / 2]);
  return 0;
}
// SPDX-License-Identifier: MIT
