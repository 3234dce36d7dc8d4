// GPU case (issue 38, tests/gpu/attribution_case.sh): the faulting kernel runs first and the error surfaces
// 300 launches later. Built with nvcc's default static runtime (the launches reach only the driver, from the
// runtime's own code). `lookup` (its 1st and only launch) gathers rows of a table by id, and one id is 2^40
// rows past it: cudaErrorIllegalAddress (700); then 300 launches of `scale` on the same stream, then a
// synchronous cudaMemcpy of the result, where the error surfaces. The program prints it and exits 1.
//
// What makes it hard: the culprit is 300 launches older than the call that returned its error, far past the
// 8 newest launches a stream keeps without breadcrumbs, so the bare shim lists 8 `scale` launches as suspects
// and must say that the list was cut (`suspects_cut`) and how to pin it (`localize_command`); with breadcrumbs
// (the wrapper's default run) the stream's first unfinished launch is `lookup`, exactly. `lookup` computes
// for a while before it reads (kLookupWork: tens of milliseconds on an H200, an estimate), as a long first
// kernel does, so the host has queued all 300 scales and is in the copy when it faults: no launch call
// returns the error first. The lookup's launch line carries the marker comment the case greps for (never a
// hard-coded line number); its call site without a stack walk is inside the static runtime, so its line comes
// from --localize's second run.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

constexpr int kRows = 1 << 16;     // ids, and rows of the table
constexpr int kScales = 300;       // launches of scale after the lookup
constexpr int kBadId = 12345;      // which id is wrong
constexpr int kBlock = 256;
// Rounds of arithmetic per element before the lookup reads: 2^24 dependent multiply-adds of about 4 cycles,
// about 35 ms at the H200's 1.98 GHz (an estimate, not measured); the host queues 300 launches in a few ms.
constexpr int kLookupWork = 1 << 24;

// Gathers table[ids[i]], weighted by a value it computes first.
__global__ void lookup(float* out, const float* table, const long long* ids, int n, int rounds) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float weight = 1.0f;
  for (int r = 0; r < rounds; ++r) weight = weight * 0.999f + 0.001f;
  out[i] = table[ids[i]] * weight;
}

__global__ void scale(float* out, float factor, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] *= factor;
}

// Checks a call as careful code does: the first error ends the program (under --block the blocked launch
// itself returns it).
void check(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return;
  std::printf("late_culprit_static: %s: %s\n", what, cudaGetErrorName(error));
  std::exit(1);
}

// The lookup in a function of its own (noinline, with a call after the launch, so that its line stays on the
// stack).
__attribute__((noinline)) void run_lookup(float* out, const float* table, const long long* ids) {
  lookup<<<(kRows + kBlock - 1) / kBlock, kBlock>>>(out, table, ids, kRows, kLookupWork);  // FAULT_LINE
  check(cudaGetLastError(), "lookup launch");
}

int main() {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  float* table = nullptr;
  float* out = nullptr;
  long long* ids = nullptr;
  check(cudaMalloc(&table, sizeof(float) * kRows), "cudaMalloc");
  check(cudaMalloc(&out, sizeof(float) * kRows), "cudaMalloc");
  check(cudaMalloc(&ids, sizeof(long long) * kRows), "cudaMalloc");
  check(cudaMemset(table, 0, sizeof(float) * kRows), "cudaMemset");
  std::vector<long long> host_ids(kRows);
  for (int i = 0; i < kRows; ++i) host_ids[i] = (i * 7919LL) % kRows;
  host_ids[kBadId] = 1LL << 40;  // the bug under test: an id far past the table
  check(cudaMemcpy(ids, host_ids.data(), sizeof(long long) * kRows, cudaMemcpyHostToDevice), "cudaMemcpy ids");
  check(cudaDeviceSynchronize(), "setup");
  std::printf("late_culprit_static: FAULT lookup#1 (id %lld at %d), then %d launches of scale, then cudaMemcpy\n",
              host_ids[kBadId], kBadId, kScales);

  run_lookup(out, table, ids);
  for (int s = 0; s < kScales; ++s) {
    scale<<<(kRows + kBlock - 1) / kBlock, kBlock>>>(out, 0.5f, kRows);
    check(cudaGetLastError(), "scale launch");
  }
  std::vector<float> result(kRows);
  // Synchronous: waits for the lookup and the scales, and returns the lookup's error.
  check(cudaMemcpy(result.data(), out, sizeof(float) * kRows, cudaMemcpyDeviceToHost), "cudaMemcpy result");
  std::printf("late_culprit_static: UNEXPECTED: no error (result[0] %g)\n", result[0]);
  return 0;
}
// SPDX-License-Identifier: MIT
