// GPU case (issue 38, tests/gpu/attribution_case.sh): four host threads, each launching the same kernel,
// `accumulate`, 40 times on its per-thread default stream (built with --default-stream per-thread and nvcc's
// default static runtime: the launches reach the driver as cuLaunchKernel_ptsz); the third worker's 31st
// launch adds its batch 2^40 floats past its buffer, unmapped whatever the allocator holds
// (cudaErrorIllegalAddress, 700). Each worker then synchronizes its stream and checks for errors; the program
// prints what each worker saw and exits 1 when one saw an error.
//
// What makes it hard: the faulting launch is one of 160 launches of one kernel, from one line, made by four
// threads at once, so neither the kernel's name nor the line tells it apart, and its per-kernel number
// (accumulate#N) changes with the interleaving from run to run. What does not change is its number among its
// own thread's launches (the report's `thread_launch`, the policy's `accumulate thread#31`: each worker
// launches nothing else), and its grid: worker w's batch has (w + 1) Mi elements, so its launches have
// (w + 1) * 4096 blocks and the faulting one (12288,1,1). The case checks the culprit's kernel, line,
// thread_launch and grid (ATTRIBUTION_EXPECT in tests/gpu/CMakeLists.txt). The fault is the program's data (an
// offset computed from the worker and launch numbers), not timing: the same launch faults in every run.
// The launch line carries the marker comment the case greps for (never a hard-coded line number).
#include <cuda_runtime.h>

#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

constexpr int kWorkers = 4;
constexpr int kLaunches = 40;
constexpr int kFaultyWorker = 2;   // the third worker
constexpr int kFaultyLaunch = 31;  // its 31st launch, 1-based as thread#N counts
constexpr int kRows = 4;           // each worker's sums: kRows rows of its batch size
constexpr int kBlock = 256;

// Adds a batch into one row of the sums.
__global__ void accumulate(float* sums, const float* input, long long offset, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) sums[offset + i] += input[i];
}

// Worker w's batch size: (w + 1) Mi elements. Uneven, as work splits are; it makes each worker's grid its own
// (the shim numbers host threads in the order of their first CUDA call, not by the program's worker number: on
// the H200, 2026-12-04, the faulting worker was the shim's thread 1, 2 or 4 from one run to the next), and big
// enough that the streams have work queued while the others launch.
int elements(int worker) { return (worker + 1) << 20; }

// Where launch `launch` (1-based) of worker `worker` adds its batch: row launch % kRows of the worker's sums.
// The bug under test: the third worker's 31st launch gets an offset 2^40 floats past the buffer.
long long destination(int worker, int launch) {
  if (worker == kFaultyWorker && launch == kFaultyLaunch) return 1LL << 40;
  return static_cast<long long>(launch % kRows) * elements(worker);
}

// Holds the workers until all have started, so that their launches interleave.
class StartLine {
 public:
  void arrive_and_wait(int parties) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (++arrived_ == parties) {
      ready_.notify_all();
      return;
    }
    ready_.wait(lock, [&] { return arrived_ == parties; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  int arrived_ = 0;
};

// One worker: its launches, then its stream's synchronize and the error it returned (or a launch's).
// noinline, with a call after the loop, so that its launch line stays a frame of its own on the stack.
__attribute__((noinline)) void work(int worker, float* sums, const float* input, StartLine* start,
                                    cudaError_t* result) {
  start->arrive_and_wait(kWorkers);
  const int n = elements(worker);
  const int blocks = (n + kBlock - 1) / kBlock;
  for (int launch = 1; launch <= kLaunches; ++launch) {
    accumulate<<<blocks, kBlock>>>(sums, input, destination(worker, launch), n);  // FAULT_LINE
  }
  cudaError_t error = cudaStreamSynchronize(cudaStreamPerThread);
  cudaError_t launched = cudaGetLastError();  // a launch that returned an error after the fault
  *result = error != cudaSuccess ? error : launched;
}

int main() {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  std::vector<float*> sums(kWorkers);
  std::vector<float*> input(kWorkers);
  for (int w = 0; w < kWorkers; ++w) {
    cudaError_t error = cudaMalloc(&sums[w], sizeof(float) * kRows * elements(w));
    if (error == cudaSuccess) error = cudaMalloc(&input[w], sizeof(float) * elements(w));
    if (error == cudaSuccess) error = cudaMemset(sums[w], 0, sizeof(float) * kRows * elements(w));
    if (error == cudaSuccess) error = cudaMemset(input[w], 0, sizeof(float) * elements(w));
    if (error != cudaSuccess) {
      std::printf("threads_ptds: setup: %s\n", cudaGetErrorName(error));
      return 2;
    }
  }
  cudaError_t setup = cudaDeviceSynchronize();
  if (setup != cudaSuccess) {
    std::printf("threads_ptds: setup: %s\n", cudaGetErrorName(setup));
    return 2;
  }
  std::printf("threads_ptds: FAULT worker=%d launch=%d grid=(%d,1,1): %d workers x %d launches of accumulate\n",
              kFaultyWorker, kFaultyLaunch, (elements(kFaultyWorker) + kBlock - 1) / kBlock, kWorkers,
              kLaunches);
  StartLine start;
  std::vector<cudaError_t> result(kWorkers, cudaSuccess);
  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w)
    workers.emplace_back(work, w, sums[w], input[w], &start, &result[w]);
  for (std::thread& worker : workers) worker.join();
  bool failed = false;
  for (int w = 0; w < kWorkers; ++w) {
    std::printf("threads_ptds: worker %d: %s\n", w, cudaGetErrorName(result[w]));
    failed = failed || result[w] != cudaSuccess;
  }
  return failed ? 1 : 0;
}
// SPDX-License-Identifier: MIT
