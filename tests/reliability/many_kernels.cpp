// What a JIT autotuner does to the driver: compiles (loads) N distinct kernels, one module or library each,
// each with a name of its own, and launches every one of them a few times on a few streams. Links no CUDA
// library: dlopen()s libcuda.so.1 and finds every entry point with dlsym on that handle (as Triton and CuPy
// do). Built with g++ against the real CUDA headers (types only); runs on the simulated stack
// (LD_LIBRARY_PATH=${CUDA_BLOCKRUN_SIM_LIBDIR}), whose cuModuleGetFunction / cuLibraryGetKernel give a new
// handle for every name asked for in a new module or library, named by that name.
//
//   many_kernels N [PASSES [STREAMS]]    defaults: PASSES 2, STREAMS 4
//
// Kernel i (0-based) is `k_<i, 6 digits>_gemm_128x64x32_w4_s3(float const*, float const*, float*, int, int,
// int)`, mangled `_Z29k_000123_gemm_128x64x32_w4_s3PKfS0_Pfiii` (44 characters; demangled 80, base name 29).
// Even kernels come from cuModuleLoadData + cuModuleGetFunction (CUfunction, launched with cuLaunchKernel),
// odd ones from cuLibraryLoadData + cuLibraryGetKernel (CUkernel, launched with cuLaunchKernelEx). Pass p
// launches kernel i on stream (i + p) % (STREAMS + 1), stream STREAMS being the legacy stream (handle 0);
// every pass ends with a synchronize of every stream.
//
// Prints what it did (deterministic: the same with and without the shim), every non-zero CUDA result as
// `<what> returned <code>`, then `done`. Lines starting with `memory:` give the process's peak and current
// resident memory (VmHWM, VmRSS, and its anonymous and file parts RssAnon, RssFile; /proc/self/status, kB):
// half-way through the first pass (every kernel loaded, the first N/2 launched once) and at the end; they are
// the only lines that differ between runs.
#include <cuda.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../programs/dlsym_driver.h"

namespace {

int failures = 0;

// Prints a non-zero result, the first few of each call site only (a broken stack must not print 10^5 lines).
bool check(const char* what, int result) {
  if (result == 0) return true;
  if (++failures <= 20) std::printf("%s returned %d\n", what, result);
  return false;
}

// The driver functions it calls, found with dlsym (tests/programs/dlsym_driver.h).
#define MANY_KERNELS_FUNCTIONS(X)            \
  DLSYM_DRIVER_SETUP_FUNCTIONS(X)            \
  X(library_load_data, cuLibraryLoadData)    \
  X(library_get_kernel, cuLibraryGetKernel)  \
  X(launch_kernel, cuLaunchKernel)           \
  X(launch_kernel_ex, cuLaunchKernelEx)      \
  X(stream_create, cuStreamCreate)           \
  X(stream_synchronize, cuStreamSynchronize) \
  X(ctx_synchronize, cuCtxSynchronize)
DLSYM_DRIVER_TABLE(Driver, MANY_KERNELS_FUNCTIONS)

// Peak and current resident memory of this process (VmHWM, VmRSS), and the current one split into anonymous
// memory (heap, stacks, TLS) and pages of mapped files (code, data, files read through mmap), in kB, from
// /proc/self/status (-1 where a field is missing).
void print_memory(const char* when) {
  const char* fields[] = {"VmHWM:", "VmRSS:", "RssAnon:", "RssFile:"};
  long values[] = {-1, -1, -1, -1};
  if (FILE* status = std::fopen("/proc/self/status", "re")) {
    char line[256];
    while (std::fgets(line, sizeof line, status)) {
      for (int i = 0; i < 4; ++i) {
        size_t length = std::strlen(fields[i]);
        if (std::strncmp(line, fields[i], length) == 0) values[i] = std::strtol(line + length, nullptr, 10);
      }
    }
    std::fclose(status);
  }
  std::printf("memory: %s VmHWM_kB=%ld VmRSS_kB=%ld RssAnon_kB=%ld RssFile_kB=%ld\n", when, values[0],
              values[1], values[2], values[3]);
}

long parse_count(const char* text, const char* what, long low) {
  char* end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (!*text || *end || value < low || value > 10000000) {
    std::fprintf(stderr, "many_kernels: bad %s '%s'\n", what, text);
    std::exit(2);
  }
  return value;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  if (argc < 2 || argc > 4) {
    std::fprintf(stderr, "usage: many_kernels N [PASSES [STREAMS]]\n");
    return 2;
  }
  const long kernels = parse_count(argv[1], "N", 1);
  const long passes = argc > 2 ? parse_count(argv[2], "PASSES", 1) : 2;
  const long streams = argc > 3 ? parse_count(argv[3], "STREAMS", 0) : 4;
  if (kernels > 999999) {
    std::fprintf(stderr, "many_kernels: at most 999999 kernels (names have 6 digits)\n");
    return 2;
  }

  void* libcuda = dlsym_driver::open_libcuda();
  if (!libcuda) return 1;
  Driver cu;
  if (!cu.find(libcuda)) return 1;

  check("cuInit", cu.init(0));
  CUdevice device = 0;
  check("cuDeviceGet", cu.device_get(&device, 0));
  CUcontext context = nullptr;
  check("cuDevicePrimaryCtxRetain", cu.primary_ctx_retain(&context, device));
  check("cuCtxSetCurrent", cu.ctx_set_current(context));

  std::vector<CUstream> stream_list(static_cast<size_t>(streams) + 1, nullptr);  // the last: legacy (0)
  for (long s = 0; s < streams; ++s) check("cuStreamCreate", cu.stream_create(&stream_list[s], 0));

  // "Compile" every kernel: one module (even) or library (odd) per kernel, as an autotuner's JIT does.
  static const char image[] = "SIMIMG1 many_kernels";
  std::vector<void*> handles(static_cast<size_t>(kernels), nullptr);
  char name[64];
  for (long i = 0; i < kernels; ++i) {
    std::snprintf(name, sizeof name, "_Z29k_%06ld_gemm_128x64x32_w4_s3PKfS0_Pfiii", i);
    if (i % 2 == 0) {
      CUmodule module = nullptr;
      CUfunction function = nullptr;
      if (check("cuModuleLoadData", cu.module_load_data(&module, image)) &&
          check("cuModuleGetFunction", cu.module_get_function(&function, module, name)))
        handles[i] = function;
    } else {
      CUlibrary library = nullptr;
      CUkernel kernel = nullptr;
      if (check("cuLibraryLoadData",
                cu.library_load_data(&library, image, nullptr, nullptr, 0, nullptr, nullptr, 0)) &&
          check("cuLibraryGetKernel", cu.library_get_kernel(&kernel, library, name)))
        handles[i] = kernel;
    }
  }
  std::vector<void*> distinct = handles;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  distinct.erase(std::remove(distinct.begin(), distinct.end(), nullptr), distinct.end());
  std::printf("kernels: %ld loaded, %zu distinct handles\n", kernels, distinct.size());

  // The kernels' parameters: (const float*, const float*, float*, int, int, int); never dereferenced.
  float* a = nullptr;
  float* b = nullptr;
  float* c = nullptr;
  int m = 128, n = 64, k = 32;
  void* params[] = {&a, &b, &c, &m, &n, &k};
  long launched = 0;
  for (long pass = 0; pass < passes; ++pass) {
    for (long i = 0; i < kernels; ++i) {
      CUstream stream = stream_list[static_cast<size_t>((i + pass) % (streams + 1))];
      bool ok;
      if (i % 2 == 0) {
        ok = check("cuLaunchKernel", cu.launch_kernel(static_cast<CUfunction>(handles[i]), 4, 1, 1, 128, 1, 1,
                                                      0, stream, params, nullptr));
      } else {
        CUlaunchConfig config{};
        config.gridDimX = 4;
        config.gridDimY = 1;
        config.gridDimZ = 1;
        config.blockDimX = 128;
        config.blockDimY = 1;
        config.blockDimZ = 1;
        config.hStream = stream;
        ok = check("cuLaunchKernelEx",
                   cu.launch_kernel_ex(&config, reinterpret_cast<CUfunction>(handles[i]), params, nullptr));
      }
      if (ok) ++launched;
      if (pass == 0 && i + 1 == kernels / 2) print_memory("half-way");
    }
    for (CUstream stream : stream_list) check("cuStreamSynchronize", cu.stream_synchronize(stream));
    std::printf("pass %ld: %ld launches in all\n", pass + 1, launched);
  }
  check("cuCtxSynchronize", cu.ctx_synchronize());
  if (failures > 20) std::printf("(%d failed calls in all)\n", failures);
  print_memory("end");
  std::printf("done\n");
  return failures == 0 ? 0 : 1;
}
// SPDX-License-Identifier: MIT
