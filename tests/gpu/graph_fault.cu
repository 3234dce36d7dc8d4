// GPU case for faults inside CUDA graphs (issue 9): a graph of three kernels captured from one stream,
// replayed ten times; before replay 8 the host poisons the index that the second node (`lookup`) reads, so
// that replay faults in node 2 of 3. tests/gpu/graph_case.sh checks that the report names replay 8, node 2,
// kernel lookup and the lines marked GRAPH_CAPTURE_BEGIN and GRAPH_LOOKUP. Prints `FAULT replay=8` before the
// replays, and the error the final synchronize returns; exits 1 when that is an error.
//
//   graph_fault            the case
//   graph_fault bench N    no fault: times N replays of a graph of 20 such kernels (median of 7 rounds),
//                          printing `BENCH graph_replay_us <us per replay>` (bench/run_graph_replay.sh)
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

__global__ void fill(float* data, float value) {
  data[blockIdx.x * blockDim.x + threadIdx.x] = value;
}

// Reads data[index[i]]: an index poisoned by the host points far outside the allocation.
__global__ void lookup(float* out, const float* data, const long long* index) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = data[index[i]];
}

__global__ void scale(float* data, float factor) {
  data[blockIdx.x * blockDim.x + threadIdx.x] *= factor;
}

constexpr int kThreads = 256, kBlocks = 16, kElements = kThreads * kBlocks;

cudaGraphExec_t capture(cudaStream_t stream, float* data, float* out, const long long* index, int rounds) {
  cudaGraph_t graph = nullptr;
  cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal);  // GRAPH_CAPTURE_BEGIN
  for (int round = 0; round < rounds; ++round) {
    fill<<<kBlocks, kThreads, 0, stream>>>(data, 1.0f);
    lookup<<<kBlocks, kThreads, 0, stream>>>(out, data, index);  // GRAPH_LOOKUP
    scale<<<kBlocks, kThreads, 0, stream>>>(out, 2.0f);
  }
  cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  cudaGraphExec_t exec = nullptr;
  if (ended == cudaSuccess) ended = cudaGraphInstantiate(&exec, graph, 0);
  if (ended != cudaSuccess) std::printf("capture failed: %s\n", cudaGetErrorName(ended));
  return exec;
}

int bench(cudaStream_t stream, float* data, float* out, const long long* index, int replays) {
  cudaGraphExec_t exec = capture(stream, data, out, index, 20 / 3 + 1);  // 21 kernels
  if (!exec) return 1;
  for (int i = 0; i < 50; ++i) cudaGraphLaunch(exec, stream);
  cudaStreamSynchronize(stream);
  std::vector<double> rounds;
  for (int round = 0; round < 7; ++round) {
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < replays; ++i) cudaGraphLaunch(exec, stream);
    cudaStreamSynchronize(stream);
    rounds.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() /
        replays);
  }
  std::sort(rounds.begin(), rounds.end());
  std::printf("BENCH graph_replay_us %.3f\n", rounds[rounds.size() / 2]);
  cudaError_t result = cudaStreamSynchronize(stream);
  return result == cudaSuccess ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  cudaStream_t stream;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  float *data, *out;
  long long* index;
  cudaMalloc(&data, kElements * sizeof(float));
  cudaMalloc(&out, kElements * sizeof(float));
  cudaMalloc(&index, kElements * sizeof(long long));
  std::vector<long long> good(kElements), bad(kElements);
  for (int i = 0; i < kElements; ++i) {
    good[i] = (i * 7) % kElements;
    bad[i] = good[i] + (1LL << 40);  // 8 TiB past the allocation: never mapped
  }
  cudaMemcpy(index, good.data(), kElements * sizeof(long long), cudaMemcpyHostToDevice);
  if (argc > 1 && std::strcmp(argv[1], "bench") == 0)
    return bench(stream, data, out, index, argc > 2 ? std::atoi(argv[2]) : 2000);

  cudaGraphExec_t exec = capture(stream, data, out, index, 1);
  if (!exec) return 1;
  constexpr int kFaultReplay = 8;
  std::printf("FAULT replay=%d\n", kFaultReplay);
  for (int replay = 1; replay <= 10; ++replay) {
    if (replay == kFaultReplay)
      cudaMemcpyAsync(index, bad.data(), kElements * sizeof(long long), cudaMemcpyHostToDevice, stream);
    cudaGraphLaunch(exec, stream);
  }
  cudaError_t result = cudaStreamSynchronize(stream);
  std::printf("cudaStreamSynchronize returned %d (%s)\n", static_cast<int>(result), cudaGetErrorName(result));
  return result == cudaSuccess ? 0 : 1;
}
// SPDX-License-Identifier: MIT
