// Benchmark workload: an empty kernel launched N times on the default stream, timed on the host
// from the first launch to the completion of the last (synchronized), after a warm-up. Prints
// "BENCH empty_launch <mean microseconds per launch> us" for bench/harness.py. Built twice: with
// -cudart shared (the runtime hooks see it) and with nvcc's default static runtime (only the driver's).
// Then the host's own cost of a launch: 100 bursts of 400 launches, each timed from the first launch's call
// to the last one's return (the queue never fills, so the GPU does not set the pace) and drained untimed;
// "BENCH launch_call_min" and "BENCH launch_call_median" are the fastest and the median burst. The minimum
// is what the launch path costs when nothing else on the machine gets in the way (issue 21: on the H200 the
// whole-loop figure moves by 1 us from one process to the next, more than the shim costs).
// Under the benchmark shim (libcuda_blockrun_bench.so, bench/bench_switch.py says why) the bursts come in pairs,
// one with the shim switched on and one off (on-off, then off-on), and "BENCH launch_call_added" is the median
// over pairs of the difference per launch: what the shim adds to a launch call, measured inside one process.
//   launch_loop [launches=200000]
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

__global__ void empty_kernel() {}

// One burst of `count` launches, timed from the first call to the last return, then drained untimed: us a launch.
static double timed_burst(int count) {
  auto first = std::chrono::steady_clock::now();
  for (int i = 0; i < count; ++i) empty_kernel<<<1, 32>>>();
  auto last = std::chrono::steady_clock::now();
  if (cudaDeviceSynchronize() != cudaSuccess) std::exit(1);
  return std::chrono::duration<double, std::micro>(last - first).count() / count;
}

static double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

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
  using Switch = void (*)(int);
  auto shim_switch = reinterpret_cast<Switch>(dlsym(RTLD_DEFAULT, "cuda_blockrun_bench_switch"));
  std::vector<double> burst_us, off_us, added_us;
  for (int b = 0; b < kBursts; ++b) {
    if (!shim_switch) {
      burst_us.push_back(timed_burst(kBurst));
      continue;
    }
    double on = 0, off = 0;
    for (int state : b % 2 == 0 ? std::vector<int>{1, 0} : std::vector<int>{0, 1}) {
      shim_switch(state);
      (state ? on : off) = timed_burst(kBurst);
    }
    shim_switch(1);
    burst_us.push_back(on);
    off_us.push_back(off);
    added_us.push_back(on - off);
  }
  std::printf("BENCH launch_call_min %.4f us\n", *std::min_element(burst_us.begin(), burst_us.end()));
  std::printf("BENCH launch_call_median %.4f us\n", median(burst_us));
  if (shim_switch) {
    std::printf("BENCH launch_call_off_median %.4f us\n", median(off_us));
    std::printf("BENCH launch_call_added %.4f us\n", median(added_us));
  }
  return 0;
}
// SPDX-License-Identifier: MIT
