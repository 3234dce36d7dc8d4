// GPU case: an out-of-range scatter launched from a known line (marker comment) of a noinline host
// function, among correct launches. Built with -g: the report must name this file and that line as the call
// site of the faulting launch (tests/gpu/report_case.sh finds the line by the marker).
#include <cstdio>

#include <cuda_runtime.h>

__global__ void fill(float* out, float value, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = value;
}

__global__ void scatter(float* out, const int* index, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[index[i]] = 1.0f;
}

// Checks the launch as careful code does. (Without anything after the launch, -O2 compiles it into a tail
// call: this function's frame is then gone from the stack, and the call site found is the line in main that
// called run_scatter.)
__attribute__((noinline)) void run_scatter(float* out, const int* index, int n) {
  scatter<<<(n + 255) / 256, 256>>>(out, index, n);  // CALLSITE_SCATTER
  cudaError_t launched = cudaGetLastError();
  if (launched != cudaSuccess) std::printf("scatter launch: %s\n", cudaGetErrorName(launched));
}

int main() {
  const int n = 1 << 20;
  float* out = nullptr;
  int* index = nullptr;
  cudaMalloc(&out, n * sizeof(float));
  cudaMalloc(&index, n * sizeof(int));
  cudaMemset(index, 0x7f, n * sizeof(int));  // every index far out of range
  for (int step = 0; step < 5; ++step) fill<<<(n + 255) / 256, 256>>>(out, 1.0f * step, n);
  run_scatter(out, index, n);
  for (int step = 0; step < 5; ++step) fill<<<(n + 255) / 256, 256>>>(out, 2.0f, n);
  cudaError_t error = cudaDeviceSynchronize();
  std::printf("cudaDeviceSynchronize: %s\n", cudaGetErrorName(error));
  return error == cudaSuccess ? 0 : 1;
}
// SPDX-License-Identifier: MIT
