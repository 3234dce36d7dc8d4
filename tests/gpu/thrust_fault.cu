// GPU case (issue 16, tests/gpu/attribution_case.sh): a thrust::transform over a device_vector whose functor
// reads far out of bounds through a raw pointer it captured, then cudaDeviceSynchronize().
//
// The pattern of real programs: C++ code that hands Thrust a functor holding raw device pointers (a lookup
// table, a gather) with an index computed wrongly. Thrust (CCCL 3, CUDA 13) runs the transform as CUB's
// transform_kernel<..., FarOutOfBoundsLookup, ...>, launched with <<<>>> from Thrust's and CUB's headers
// inlined into this program: the launch's caller is library code, the program's own line is further out (in
// run_lookup, at the line that carries the marker comment the case greps for; never a hard-coded line
// number). The functor reads table[i + (1 << 40)]: 4 Ti floats past the table, unmapped memory whatever the
// allocator holds: cudaErrorIllegalAddress (700). With the default execution policy Thrust synchronizes the
// stream after the transform and throws thrust::system_error; the program reports it, then calls
// cudaDeviceSynchronize() and prints what it returned.
// Built with -O2 -g, with nvcc's default static runtime (launches reach the driver only) and with -cudart
// shared (tests/gpu/CMakeLists.txt). The device_vectors are never destroyed: their destructors would call
// cudaFree in the failed context, and Thrust throws from there (std::terminate), which would hide the result.
#include <cstdio>
#include <exception>

#include <cuda_runtime.h>
#include <thrust/device_vector.h>
#include <thrust/sequence.h>
#include <thrust/system_error.h>
#include <thrust/transform.h>

// Reads table[i + offset]: with offset 1 << 40, far out of bounds.
struct FarOutOfBoundsLookup {
  const float* table;
  long long offset;
  __device__ float operator()(int i) const { return table[i + offset] * 2.0f; }
};

// The faulting transform, in a function of the program's own (noinline, and something after the call, so that
// the call is neither inlined into main nor a tail call: its line stays on the stack).
__attribute__((noinline)) void run_lookup(const thrust::device_vector<int>& keys,
                                          const thrust::device_vector<float>& table,
                                          thrust::device_vector<float>& out, long long offset) {
  FarOutOfBoundsLookup lookup{thrust::raw_pointer_cast(table.data()), offset};
  thrust::transform(keys.begin(), keys.end(), out.begin(), lookup);  // FAULT_LINE
  std::printf("thrust_fault: thrust::transform returned\n");
}

int main() {
  const int n = 1 << 20;
  // Never deleted (see above).
  auto* keys = new thrust::device_vector<int>(n);
  auto* table = new thrust::device_vector<float>(n, 1.0f);
  auto* out = new thrust::device_vector<float>(n);
  thrust::sequence(keys->begin(), keys->end());
  run_lookup(*keys, *table, *out, 0);  // a good transform first: the same kernel, in bounds
  cudaError_t setup = cudaDeviceSynchronize();
  std::printf("thrust_fault: setup: %s\n", cudaGetErrorName(setup));
  if (setup != cudaSuccess) return 2;
  std::printf("thrust_fault: transform with offset 1 << 40\n");
  std::fflush(stdout);
  try {
    run_lookup(*keys, *table, *out, 1LL << 40);
  } catch (const thrust::system_error& error) {
    std::printf("thrust_fault: thrust::transform threw thrust::system_error: %s\n", error.what());
  } catch (const std::exception& error) {
    std::printf("thrust_fault: thrust::transform threw: %s\n", error.what());
  }
  cudaError_t error = cudaDeviceSynchronize();
  std::printf("thrust_fault: cudaDeviceSynchronize: %s\n", cudaGetErrorName(error));
  return error == cudaSuccess ? 0 : 1;
}
// SPDX-License-Identifier: MIT
