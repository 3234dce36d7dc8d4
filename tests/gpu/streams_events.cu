// GPU case (issue 38, tests/gpu/attribution_case.sh): a producer/consumer pipeline on two non-blocking streams,
// joined by events: for each batch the producer stream runs `produce`, records an event; the consumer stream
// waits for that event (cudaStreamWaitEvent), runs `consume` and a host callback (cudaLaunchHostFunc) that
// counts the batches consumed. The producer's 8th launch (batch 8 of 10) scatters through a position list
// with one entry 2^40 floats past its batch: cudaErrorIllegalAddress (700). The host queues every batch, then
// waits at cudaStreamSynchronize(consumer), where the error surfaces; it prints it and exits 1.
//
// What makes it hard: two streams have work in flight when the producer faults. The consumer is the slow
// stage (three times the producer's work per batch), so its launches queued before the faulting produce (the
// consume of batch 7 at least, which starts no earlier than produce 8 and runs longer) have not completed:
// breadcrumbs see one unfinished launch on each stream, two candidates, and --localize must tell which (on the
// H200, 2026-12-04: consume#6 and produce#8; without the wrapper 5 of the 10 batches had been consumed). The
// producer is slow enough (about a millisecond a batch: kProduceWork) that the host has queued all ten batches
// before batch 8 runs, so no launch call returns the error first. One host thread: the faulting launch is
// produce#8 in every run (ATTRIBUTION_EXPECT kernel_launch=8, tests/gpu/CMakeLists.txt). The produce launch's
// line carries the marker comment the case greps for (never a hard-coded line number).
#include <cuda_runtime.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <vector>

constexpr int kBatches = 10;
constexpr int kFaultyBatch = 8;  // 1-based: produce's 8th launch
constexpr int kElements = 1 << 16;
constexpr int kBlock = 256;
// Rounds of arithmetic per element: 2^19 dependent multiply-adds of about 4 cycles, about a millisecond at the
// H200's 1.98 GHz (an estimate, not measured; twice that when both stages share the SMs).
constexpr int kProduceWork = 1 << 19;
constexpr int kConsumeWork = 3 * kProduceWork;

// Stands for a stage's computation: `rounds` dependent multiply-adds.
__device__ float compute(float value, int rounds) {
  for (int r = 0; r < rounds; ++r) value = value * 0.999f + 0.001f;
  return value;
}

// Computes a batch's values and scatters them to their positions (a permutation, but for the bad entry).
__global__ void produce(float* batch, const long long* positions, int n, int rounds) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) batch[positions[i]] = compute(static_cast<float>(i), rounds);
}

// Reduces a batch into the total, after its own (longer) computation.
__global__ void consume(const float* batch, float* total, int n, int rounds) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(total, compute(batch[i], rounds));
}

std::atomic<int> consumed{0};

// Runs on the driver's callback thread once a batch's consume has completed: counts it (no CUDA call: a
// callback must not make one).
void CUDART_CB count_batch(void*) { consumed.fetch_add(1); }

// Checks a call as careful code does: the first error ends the program (under --block the blocked launch
// itself returns it).
void check(cudaError_t error, const char* what, int batch) {
  if (error == cudaSuccess) return;
  std::printf("streams_events: %s (batch %d): %s; %d of %d batches consumed\n", what, batch,
              cudaGetErrorName(error), consumed.load(), kBatches);
  std::exit(1);
}

int main() {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  cudaStream_t producer, consumer;
  check(cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking), "cudaStreamCreateWithFlags", 0);
  check(cudaStreamCreateWithFlags(&consumer, cudaStreamNonBlocking), "cudaStreamCreateWithFlags", 0);
  std::vector<cudaEvent_t> produced(kBatches);
  for (cudaEvent_t& event : produced)
    check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreateWithFlags", 0);
  float* batches = nullptr;
  float* total = nullptr;
  long long* positions = nullptr;
  check(cudaMalloc(&batches, sizeof(float) * kElements * kBatches), "cudaMalloc", 0);
  check(cudaMalloc(&total, sizeof(float)), "cudaMalloc", 0);
  check(cudaMalloc(&positions, sizeof(long long) * kElements * kBatches), "cudaMalloc", 0);
  check(cudaMemset(total, 0, sizeof(float)), "cudaMemset", 0);
  // Each batch's positions: the identity, but for one entry of batch kFaultyBatch (the bug under test).
  std::vector<long long> host(static_cast<size_t>(kElements) * kBatches);
  for (int b = 0; b < kBatches; ++b)
    for (int i = 0; i < kElements; ++i) host[static_cast<size_t>(b) * kElements + i] = i;
  host[static_cast<size_t>(kFaultyBatch - 1) * kElements + 4321] = 1LL << 40;
  check(cudaMemcpy(positions, host.data(), sizeof(long long) * host.size(), cudaMemcpyHostToDevice), "cudaMemcpy",
        0);
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize", 0);
  std::printf("streams_events: FAULT batch=%d: produce#%d scatters to 2^40; %d batches\n", kFaultyBatch,
              kFaultyBatch, kBatches);

  const int blocks = (kElements + kBlock - 1) / kBlock;
  for (int b = 1; b <= kBatches; ++b) {
    float* batch = batches + static_cast<size_t>(b - 1) * kElements;
    const long long* where = positions + static_cast<size_t>(b - 1) * kElements;
    produce<<<blocks, kBlock, 0, producer>>>(batch, where, kElements, kProduceWork);  // FAULT_LINE
    check(cudaGetLastError(), "produce launch", b);
    check(cudaEventRecord(produced[b - 1], producer), "cudaEventRecord", b);
    check(cudaStreamWaitEvent(consumer, produced[b - 1], 0), "cudaStreamWaitEvent", b);
    consume<<<blocks, kBlock, 0, consumer>>>(batch, total, kElements, kConsumeWork);
    check(cudaGetLastError(), "consume launch", b);
    check(cudaLaunchHostFunc(consumer, count_batch, nullptr), "cudaLaunchHostFunc", b);
  }
  std::printf("streams_events: %d batches queued; cudaStreamSynchronize(consumer)\n", kBatches);
  check(cudaStreamSynchronize(consumer), "cudaStreamSynchronize(consumer)", kBatches);
  check(cudaStreamSynchronize(producer), "cudaStreamSynchronize(producer)", kBatches);
  std::printf("streams_events: UNEXPECTED: no error; %d of %d batches consumed\n", consumed.load(), kBatches);
  return 0;
}
// SPDX-License-Identifier: MIT
