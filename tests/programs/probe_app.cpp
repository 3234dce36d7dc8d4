// The programs of issue 17's probes: how careless or hostile programs and environments try to break the
// shim (its files, signals, exit, fork). Built with g++ against the real CUDA headers, linked with the
// simulated runtime and driver (tests/sim); each scenario prints what it did, every non-zero CUDA result as
// `<what> returned <code>`, then `done` where it ends normally, so a test can compare runs with and
// without the shim.
//
//   probe_app thread-calls-exit     4 threads launch without end; a fifth calls exit(6) after 200 launches
//   probe_app name NAME COUNT       a kernel whose (mangled) name is NAME, launched COUNT times (driver API)
//   probe_app name-fault-abort NAME that kernel launched once (the test makes it fault), then abort()
//   probe_app fork-crash | fork-abort
//                                   3 launches; a child that makes no CUDA call segfaults (or aborts); the
//                                   parent waits for it, launches 3 more and synchronizes
//   probe_app closefd2 FILE         closes stderr, opens FILE (fd 2) and writes "program data" to it, 6
//                                   launches and a synchronize
//   probe_app closeall-midway FILE  a launch; closes every fd >= 3; opens FILE, writes "program data", then
//                                   fill and stencil (the test makes stencil fault) and a synchronize
//   probe_app fsize N               sets RLIMIT_FSIZE to N bytes, then 2,000 launches and a synchronize
//   probe_app loop N                N launches and a synchronize
//   probe_app segv-ignored          ignores SIGSEGV, a launch, sends itself SIGSEGV, a launch, synchronize
//   probe_app loader-race LIB N     a launch; then one thread loads and unloads LIB N times while another
//   calls
//                                   cuMemGetInfo_v2 N times, which the simulated driver lacks (the shim looks
//                                   for its real function at each call), then a synchronize
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "sim_kernels.h"

SIM_KERNEL(fill, "_Z4fillPfif");
SIM_KERNEL(stencil, "_Z7stencilPfPKfix");

namespace {

const dim3 kGrid(64);
const dim3 kBlock(128);

void report(const char* what, int result) {
  if (result != 0) std::printf("%s returned %d\n", what, result);
}

int launches(int count) {
  for (int i = 0; i < count; ++i) report("launch", sim::launch(fill, kGrid, kBlock, nullptr));
  report("cudaDeviceSynchronize", cudaDeviceSynchronize());
  std::printf("done\n");
  return 0;
}

int thread_calls_exit() {
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([] {
      for (;;) sim::launch(fill, kGrid, kBlock, nullptr);
    });
  }
  std::thread([] {
    for (int i = 0; i < 200; ++i) sim::launch(fill, kGrid, kBlock, nullptr);
    std::fflush(stdout);
    std::exit(6);
  }).join();
  return 0;  // not reached
}

// A kernel named `name` from a module of the simulated driver's own image format, launched `count` times.
int named(const char* name, int count, bool then_abort) {
  report("cudaFree(0)", cudaFree(nullptr));  // the runtime creates the primary context
  static const char image[] = "SIMIMG1 probe_app";
  CUmodule module = nullptr;
  report("cuModuleLoadData", cuModuleLoadData(&module, image));
  CUfunction function = nullptr;
  report("cuModuleGetFunction", cuModuleGetFunction(&function, module, name));
  for (int i = 0; i < count; ++i)
    report("cuLaunchKernel", cuLaunchKernel(function, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr));
  std::fflush(stdout);
  if (then_abort) std::abort();
  report("cuCtxSynchronize", cuCtxSynchronize());
  std::printf("done\n");
  return 0;
}

int fork_and_die(bool abort_child) {
  for (int i = 0; i < 3; ++i) report("launch", sim::launch(fill, kGrid, kBlock, nullptr));
  std::fflush(stdout);
  pid_t child = fork();
  if (child == 0) {
    if (abort_child) std::abort();
    std::raise(SIGSEGV);
    _exit(1);
  }
  int status = 0;
  waitpid(child, &status, 0);
  std::printf("child ended by signal %d\n", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return launches(3);
}

int closefd2(const char* file) {
  close(STDERR_FILENO);
  int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::printf("data file fd %d\n", fd);
  const char data[] = "program data\n";
  if (write(fd, data, sizeof data - 1) < 0) return 1;
  return launches(6);
}

int closeall_midway(const char* file) {
  report("launch", sim::launch(fill, kGrid, kBlock, nullptr));
  for (int fd = 3; fd < 1024; ++fd) close(fd);
  int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const char data[] = "program data\n";
  if (write(fd, data, sizeof data - 1) < 0) return 1;
  report("launch", sim::launch(fill, kGrid, kBlock, nullptr));
  report("launch", sim::launch(stencil, kGrid, kBlock, nullptr));
  report("cudaDeviceSynchronize", cudaDeviceSynchronize());
  close(fd);
  std::printf("done\n");
  return 0;
}

int fsize(long bytes) {
  rlimit limit{static_cast<rlim_t>(bytes), static_cast<rlim_t>(bytes)};
  if (setrlimit(RLIMIT_FSIZE, &limit) != 0) return 1;
  return launches(2000);
}

int segv_ignored() {
  std::signal(SIGSEGV, SIG_IGN);
  report("launch", sim::launch(fill, kGrid, kBlock, nullptr));
  kill(getpid(), SIGSEGV);
  std::printf("survived SIGSEGV\n");
  return launches(1);
}

// The loader's two locks, taken in both orders (found on the H100, 2026-12-05): a dlopen holds the loader's
// lock and then takes the lock dl_iterate_phdr holds, and a shim that opened a library from inside a
// dl_iterate_phdr walk took them the other way round. Each call of a function the driver lacks makes the shim
// look for it again, among the loaded libcuda objects.
int loader_race(const char* library, int count) {
  report("launch", sim::launch(fill, kGrid, kBlock, nullptr));
  using GetInfo = CUresult (*)(size_t*, size_t*);
  auto get_info = reinterpret_cast<GetInfo>(dlsym(RTLD_DEFAULT, "cuMemGetInfo_v2"));
  if (!get_info) return 1;
  std::thread loader([&] {
    for (int i = 0; i < count; ++i) {
      void* handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
      if (!handle) return;
      dlclose(handle);
    }
  });
  size_t free_bytes = 0, total_bytes = 0;
  for (int i = 0; i < count; ++i) get_info(&free_bytes, &total_bytes);
  loader.join();
  report("cudaDeviceSynchronize", cudaDeviceSynchronize());
  std::printf("done\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IONBF, 0);  // output order must not depend on buffering
  const std::string scenario = argc > 1 ? argv[1] : "";
  const char* first = argc > 2 ? argv[2] : "";
  if (scenario == "thread-calls-exit") return thread_calls_exit();
  if (scenario == "name" && argc > 3) return named(first, std::atoi(argv[3]), false);
  if (scenario == "name-fault-abort" && argc > 2) return named(first, 1, true);
  if (scenario == "fork-crash") return fork_and_die(false);
  if (scenario == "fork-abort") return fork_and_die(true);
  if (scenario == "closefd2" && argc > 2) return closefd2(first);
  if (scenario == "closeall-midway" && argc > 2) return closeall_midway(first);
  if (scenario == "fsize" && argc > 2) return fsize(std::atol(first));
  if (scenario == "loop" && argc > 2) return launches(std::atoi(first));
  if (scenario == "segv-ignored") return segv_ignored();
  if (scenario == "loader-race" && argc > 3) return loader_race(first, std::atoi(argv[3]));
  std::fprintf(stderr, "probe_app: unknown scenario or missing argument: '%s'\n", scenario.c_str());
  return 2;
}
// SPDX-License-Identifier: MIT
