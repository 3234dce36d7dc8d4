// A program with no CUDA library that finds CUDA entry points at run time (dlsym), as plug-in hosts
// do. Under the shim it finds the shim's wrappers, whose real functions exist nowhere: each call must
// return its library's "not initialized" status, never crash.
#include <dlfcn.h>

#include <cstdio>

int main() {
  using RuntimeCall = int (*)();
  using CublasCall = int (*)(void*, int, int, int, int, int, const float*, const float*, int, const float*,
                             int, const float*, float*, int);
  auto synchronize = reinterpret_cast<RuntimeCall>(dlsym(RTLD_DEFAULT, "cudaDeviceSynchronize"));
  auto sgemm = reinterpret_cast<CublasCall>(dlsym(RTLD_DEFAULT, "cublasSgemm_v2"));
  if (synchronize) {
    std::printf("cudaDeviceSynchronize returned %d\n", synchronize());
  } else {
    std::printf("cudaDeviceSynchronize absent\n");
  }
  if (sgemm) {
    std::printf("cublasSgemm_v2 returned %d\n",
                sgemm(nullptr, 0, 0, 1, 1, 1, nullptr, nullptr, 1, nullptr, 1, nullptr, nullptr, 1));
  } else {
    std::printf("cublasSgemm_v2 absent\n");
  }
  return 0;
}
// SPDX-License-Identifier: MIT
