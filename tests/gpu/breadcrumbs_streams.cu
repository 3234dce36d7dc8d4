// GPU case for breadcrumbs (issue 8): a fault on one of several streams, with the launches made from one
// host thread or from eight, each thread on its own stream. With nothing blocked, --breadcrumbs must name the
// faulting launch exactly, or list it among the candidates (the first unfinished launch of each stream that
// had work in flight), never point elsewhere. tests/gpu/breadcrumbs_case.sh checks the report.
//
//   breadcrumbs_streams streams   4 streams, one thread: `poke` on stream 2 faults in round 30 (poke's
//                                 launch 123 of the process: round * 4 + stream + 1)
//   breadcrumbs_streams threads   8 threads, one stream each, all launching at once: thread 5's `poke` faults
//                                 in its round 30
// Prints `FAULT stream=<handle> poke_launch=<N or ?>` before it launches, then the error the final
// synchronize returns; exits 1 when that is an error.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

namespace {

constexpr int kRounds = 50;
constexpr int kFaultRound = 30;

// Keeps a stream busy for some microseconds, so that several streams have work in flight.
__global__ void busy(float* data, int iterations) {
  float value = data[threadIdx.x];
  for (int i = 0; i < iterations; ++i) value = value * 0.999f + 0.001f;
  data[threadIdx.x] = value;
}

// Writes its block's values; when poisoned, into an address that is never mapped (an illegal address).
__global__ void poke(float* data, int poison) {
  float* target = poison ? reinterpret_cast<float*>(0x10) : data;
  target[threadIdx.x] = 1.0f;
}

void round_on(cudaStream_t stream, float* data, bool poison) {
  busy<<<1, 128, 0, stream>>>(data, 2000);
  poke<<<1, 32, 0, stream>>>(data, poison ? 1 : 0);
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  bool threads = argc > 1 && std::strcmp(argv[1], "threads") == 0;
  const int streams = threads ? 8 : 4;
  const int fault_stream = threads ? 5 : 2;
  std::vector<cudaStream_t> stream(streams);
  std::vector<float*> data(streams);
  for (int s = 0; s < streams; ++s) {
    cudaStreamCreateWithFlags(&stream[s], cudaStreamNonBlocking);
    cudaMalloc(&data[s], 128 * sizeof(float));
    cudaMemset(data[s], 0, 128 * sizeof(float));
  }
  cudaDeviceSynchronize();
  if (threads) {
    std::printf("FAULT stream=%p poke_launch=?\n", static_cast<void*>(stream[fault_stream]));
    std::vector<std::thread> workers;
    for (int s = 0; s < streams; ++s) {
      workers.emplace_back([&, s] {
        for (int round = 0; round < kRounds; ++round)
          round_on(stream[s], data[s], s == fault_stream && round == kFaultRound);
      });
    }
    for (std::thread& worker : workers) worker.join();
  } else {
    std::printf("FAULT stream=%p poke_launch=%d\n", static_cast<void*>(stream[fault_stream]),
                kFaultRound * streams + fault_stream + 1);
    for (int round = 0; round < kRounds; ++round) {
      for (int s = 0; s < streams; ++s)
        round_on(stream[s], data[s], s == fault_stream && round == kFaultRound);
    }
  }
  cudaError_t result = cudaDeviceSynchronize();
  std::printf("cudaDeviceSynchronize returned %d (%s)\n", static_cast<int>(result), cudaGetErrorName(result));
  return result == cudaSuccess ? 0 : 1;
}
// SPDX-License-Identifier: MIT
