// The bundled demo: a small CUDA program with a known fault, written the way many C++ programs are
// (no error check after each launch). In step 12 the stencil kernel is given a wrong offset and
// writes far out of bounds; without help the error surfaces only at the final cudaMemcpy, with no
// kernel named. Under `cuda-blockrun --block all` the report names the stencil launch (#38).
//
// `demo-stencil check` checks cudaGetLastError after every launch and says where it first saw the
// error: the GPU test case (tests/gpu) uses it to show that a blocked launch reports its own fault.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <vector>

__global__ void fill(float* data, int n, float value) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = value;
}

__global__ void stencil(float* out, const float* in, int n, long long offset) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i > 0 && i < n - 1) out[i + offset] = 0.25f * in[i - 1] + 0.5f * in[i] + 0.25f * in[i + 1];
}

__global__ void scale(float* data, int n, float factor) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= factor;
}

int main(int argc, char** argv) {
  const bool check_each_launch = argc > 1 && std::strcmp(argv[1], "check") == 0;
  const int n = 1 << 20;
  const int threads = 256;
  const int blocks = n / threads;
  float *in = nullptr, *out = nullptr;
  cudaMalloc(&in, n * sizeof(float));
  cudaMalloc(&out, n * sizeof(float));
  int launch = 0;
  auto checked = [&] {  // after each launch, in `check` mode
    ++launch;
    cudaError_t error = check_each_launch ? cudaGetLastError() : cudaSuccess;
    if (error == cudaSuccess) return true;
    std::printf("demo: first error after launch %d: %s\n", launch, cudaGetErrorName(error));
    return false;
  };
  for (int step = 0; step < 20; ++step) {
    fill<<<blocks, threads>>>(in, n, 1.0f + step);
    if (!checked()) return 1;
    long long offset = step == 12 ? (1LL << 40) : 0;  // the bug: a wrong offset in one step
    stencil<<<blocks, threads>>>(out, in, n, offset);
    if (!checked()) return 1;
    scale<<<blocks, threads>>>(out, n, 0.5f);
    if (!checked()) return 1;
  }
  std::vector<float> host(n);
  cudaError_t error = cudaMemcpy(host.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost);
  if (error != cudaSuccess) {
    std::printf("demo: CUDA error at cudaMemcpy: %s (%s)\n", cudaGetErrorName(error),
                cudaGetErrorString(error));
    return 1;
  }
  std::printf("demo: out[1] = %g\n", host[1]);
  return 0;
}
// SPDX-License-Identifier: MIT
