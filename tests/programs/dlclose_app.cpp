// A program that loads the CUDA driver, launches, unloads it with dlclose, and does it again (as a plugin
// host that loads and unloads GPU plugins might): under the shim it must run exactly as without it. The
// shim caches the driver's functions, so it keeps the library mapped (docs/reliability.md).
//   dlclose_app [rounds]
// Prints every non-zero CUDA result as `<what> returned <code>`, then `round N: K launches` and `done`.
#include <cuda.h>
#include <dlfcn.h>
#include <sys/mman.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "dlsym_driver.h"

namespace {

int report(const char* what, int result) {
  if (result != 0) std::printf("%s returned %d\n", what, result);
  return result;
}

// The driver functions a round calls, found again in every round (dlsym_driver.h).
#define DLCLOSE_APP_FUNCTIONS(X)   \
  DLSYM_DRIVER_SETUP_FUNCTIONS(X)  \
  X(launch_kernel, cuLaunchKernel) \
  X(ctx_synchronize, cuCtxSynchronize)
DLSYM_DRIVER_TABLE(Driver, DLCLOSE_APP_FUNCTIONS)

bool round_trip(int round) {
  void* libcuda = dlsym_driver::open_libcuda();
  if (!libcuda) return false;
  Driver cu;
  if (!cu.find(libcuda)) return false;
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUmodule module = nullptr;
  CUfunction function = nullptr;
  static const char image[] = "SIMIMG1 dlclose_app";
  if (report("cuInit", cu.init(0)) || report("cuDeviceGet", cu.device_get(&device, 0)) ||
      report("cuDevicePrimaryCtxRetain", cu.primary_ctx_retain(&context, device)) ||
      report("cuCtxSetCurrent", cu.ctx_set_current(context)) ||
      report("cuModuleLoadData", cu.module_load_data(&module, image)) ||
      report("cuModuleGetFunction", cu.module_get_function(&function, module, "add_array")))
    return false;
  int launches = 0;
  for (int i = 0; i < 3; ++i) {
    if (report("cuLaunchKernel",
               cu.launch_kernel(function, 4, 1, 1, 64, 1, 1, 0, nullptr, nullptr, nullptr)) == 0)
      ++launches;
  }
  report("cuCtxSynchronize", cu.ctx_synchronize());
  std::printf("round %d: %d launches\n", round, launches);
  report("dlclose", dlclose(libcuda));
  // Occupy memory where the library was, so that a stale pointer into it would not still work by chance.
  void* filler = mmap(nullptr, 64 << 20, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  (void)filler;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  int rounds = argc > 1 ? std::atoi(argv[1]) : 3;
  for (int round = 1; round <= rounds; ++round) {
    if (!round_trip(round)) return 1;
  }
  std::printf("done\n");
  return 0;
}
// SPDX-License-Identifier: MIT
