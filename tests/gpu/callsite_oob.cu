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

__attribute__((noinline)) void run_scatter(float* out, const int* index, int n) {
  scatter<<<(n + 255) / 256, 256>>>(out, index, n);  // CALLSITE_SCATTER
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
