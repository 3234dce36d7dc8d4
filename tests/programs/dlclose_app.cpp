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

namespace {

int report(const char* what, int result) {
  if (result != 0) std::printf("%s returned %d\n", what, result);
  return result;
}

template <typename Function>
bool find(void* library, const char* name, Function* out) {
  *out = reinterpret_cast<Function>(dlsym(library, name));
  if (!*out) std::printf("dlsym %s failed\n", name);
  return *out != nullptr;
}

bool round_trip(int round) {
  void* libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!libcuda) {
    std::printf("dlopen libcuda.so.1 failed\n");
    return false;
  }
  decltype(&::cuInit) init;
  decltype(&::cuDeviceGet) device_get;
  decltype(&::cuDevicePrimaryCtxRetain) primary_ctx_retain;
  decltype(&::cuCtxSetCurrent) ctx_set_current;
  decltype(&::cuModuleLoadData) module_load_data;
  decltype(&::cuModuleGetFunction) module_get_function;
  decltype(&::cuLaunchKernel) launch_kernel;
  decltype(&::cuCtxSynchronize) ctx_synchronize;
  if (!find(libcuda, "cuInit", &init) || !find(libcuda, "cuDeviceGet", &device_get) ||
      !find(libcuda, "cuDevicePrimaryCtxRetain", &primary_ctx_retain) ||
      !find(libcuda, "cuCtxSetCurrent", &ctx_set_current) ||
      !find(libcuda, "cuModuleLoadData", &module_load_data) ||
      !find(libcuda, "cuModuleGetFunction", &module_get_function) ||
      !find(libcuda, "cuLaunchKernel", &launch_kernel) ||
      !find(libcuda, "cuCtxSynchronize", &ctx_synchronize))
    return false;
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUmodule module = nullptr;
  CUfunction function = nullptr;
  static const char image[] = "SIMIMG1 dlclose_app";
  if (report("cuInit", init(0)) || report("cuDeviceGet", device_get(&device, 0)) ||
      report("cuDevicePrimaryCtxRetain", primary_ctx_retain(&context, device)) ||
      report("cuCtxSetCurrent", ctx_set_current(context)) ||
      report("cuModuleLoadData", module_load_data(&module, image)) ||
      report("cuModuleGetFunction", module_get_function(&function, module, "add_array")))
    return false;
  int launches = 0;
  for (int i = 0; i < 3; ++i) {
    if (report("cuLaunchKernel", launch_kernel(function, 4, 1, 1, 64, 1, 1, 0, nullptr, nullptr, nullptr)) ==
        0)
      ++launches;
  }
  report("cuCtxSynchronize", ctx_synchronize());
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
