// GPU case: a kernel writes out of bounds in its 13th launch (launch #38 of the program). The program
// checks cudaGetLastError after every launch and prints where it first saw an error: without help
// that is some later launch or the final copy; under `cuda-blockrun --block all` it is launch 38.
// Built with -cudart shared (the runtime-level hooks) and, later, other ways of linking.
#include <cuda_runtime.h>

#include <cstdio>

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

int main() {
  const int n = 1 << 20, threads = 256, blocks = n / threads;
  float *in = nullptr, *out = nullptr;
  cudaMalloc(&in, n * sizeof(float));
  cudaMalloc(&out, n * sizeof(float));
  int launch = 0;
  for (int step = 0; step < 20; ++step) {
    long long offset = step == 12 ? (1LL << 40) : 0;
    fill<<<blocks, threads>>>(in, n, 1.0f + step);
    cudaError_t e1 = cudaGetLastError();
    stencil<<<blocks, threads>>>(out, in, n, offset);
    cudaError_t e2 = cudaGetLastError();
    scale<<<blocks, threads>>>(out, n, 0.5f);
    cudaError_t e3 = cudaGetLastError();
    cudaError_t errors[3] = {e1, e2, e3};
    for (int k = 0; k < 3; ++k) {
      ++launch;
      if (errors[k] != cudaSuccess) {
        std::printf("program: first error after launch %d: %s\n", launch, cudaGetErrorName(errors[k]));
        return 1;
      }
    }
  }
  cudaError_t e = cudaDeviceSynchronize();
  std::printf("program: first error at cudaDeviceSynchronize: %s\n", cudaGetErrorName(e));
  return e == cudaSuccess ? 0 : 1;
}
