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
// With "write" as the second argument (for the shim with breadcrumbs on: issue 21's "the shim's own beyond the
// driver's write") the bursts with the shim switched off make, after each launch, the write the shim's breadcrumb
// makes (cuStreamWriteValue64_v2 of the launch's number into pinned host-mapped memory, shim/breadcrumbs.cpp):
// "BENCH launch_call_added" is then what the shim adds beyond that write, in one process.
//   launch_loop [launches=200000] [write]
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

__global__ void empty_kernel() {}

// The breadcrumb's write, made by the program itself (the "write" argument): the driver's function and a slot.
struct OwnWrite {
  decltype(&cuStreamWriteValue64) write = nullptr;  // the v2 function (CUDA 12.0's default)
  CUdeviceptr slot = 0;
};

// The driver's cuStreamWriteValue64_v2 and a pinned host-mapped slot, as the shim sets them up; exits on failure.
static OwnWrite set_up_own_write() {
  OwnWrite own;
  void* function = nullptr;
  cudaDriverEntryPointQueryResult found;
  void* host = nullptr;
  void* device = nullptr;
  if (cudaGetDriverEntryPointByVersion("cuStreamWriteValue64", &function, 12000, cudaEnableDefault, &found) !=
          cudaSuccess ||
      found != cudaDriverEntryPointSuccess ||
      cudaHostAlloc(&host, 64, cudaHostAllocMapped | cudaHostAllocPortable) != cudaSuccess ||
      cudaHostGetDevicePointer(&device, host, 0) != cudaSuccess) {
    std::fprintf(stderr, "launch_loop: no cuStreamWriteValue64 or pinned host-mapped memory for \"write\"\n");
    std::exit(2);
  }
  own.write = reinterpret_cast<decltype(&cuStreamWriteValue64)>(function);
  own.slot = reinterpret_cast<CUdeviceptr>(device);
  return own;
}

// One burst of `count` launches, timed from the first call to the last return, then drained untimed: us a launch.
// With `own` set, each launch is followed by its write on the same (legacy default) stream.
static double timed_burst(int count, const OwnWrite* own = nullptr) {
  auto first = std::chrono::steady_clock::now();
  for (int i = 0; i < count; ++i) {
    empty_kernel<<<1, 32>>>();
    if (own && own->write(nullptr, own->slot, static_cast<cuuint64_t>(i + 1), 0) != CUDA_SUCCESS) std::exit(1);
  }
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
  bool write_off = argc > 2 && std::strcmp(argv[2], "write") == 0;
  if (launches <= 0 || (argc > 2 && !write_off)) {
    std::fprintf(stderr, "usage: %s [launches=200000] [write]\n", argv[0]);
    return 2;
  }
  using Switch = void (*)(int);
  auto shim_switch = reinterpret_cast<Switch>(dlsym(RTLD_DEFAULT, "cuda_blockrun_bench_switch"));
  if (write_off && !shim_switch) {
    std::fprintf(stderr, "launch_loop: \"write\" needs the benchmark shim (libcuda_blockrun_bench.so) preloaded\n");
    return 2;
  }
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
  std::vector<double> burst_us, off_us, added_us;
  OwnWrite own;
  if (write_off) own = set_up_own_write();
  for (int b = 0; b < kBursts; ++b) {
    if (!shim_switch) {
      burst_us.push_back(timed_burst(kBurst));
      continue;
    }
    double on = 0, off = 0;
    for (int state : b % 2 == 0 ? std::vector<int>{1, 0} : std::vector<int>{0, 1}) {
      shim_switch(state);
      (state ? on : off) = timed_burst(kBurst, state || !write_off ? nullptr : &own);
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
    std::printf("BENCH launch_call_added%s %.4f us\n", write_off ? "_beyond_write" : "", median(added_us));
  }
  return 0;
}
// SPDX-License-Identifier: MIT
