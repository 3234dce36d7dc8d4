// Loads the shim itself (dlopen, as a plugin could; a secure-execution process ignores LD_PRELOAD) and calls
// one of its CUDA wrappers. Run as a setgid program (secure-execution mode, AT_SECURE) the shim must do
// nothing at all: not read its configuration (an invalid one must not stop the program), open no log file,
// print nothing.
//   secure_probe <shim>
// Prints the wrapper's result and `done`.
#include <dlfcn.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  void* shim = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!shim) {
    std::printf("dlopen failed: %s\n", dlerror());
    return 1;
  }
  auto synchronize = reinterpret_cast<int (*)()>(dlsym(shim, "cudaDeviceSynchronize"));
  std::printf("cudaDeviceSynchronize returned %d\n", synchronize ? synchronize() : -1);
  std::printf("done\n");
  return 0;
}
// SPDX-License-Identifier: MIT
