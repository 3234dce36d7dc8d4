// The process life cycle under the shim: CUDA calls from the program's atexit handler and from a static
// destructor (after the shim's own statics would have been destroyed, were it to destroy any), and exit
// while another thread is still launching. `lifecycle_app fast` ends with _exit instead.
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "sim_kernels.h"

SIM_KERNEL(fill, "_Z4fillPfif");

namespace {

struct LaunchesWhenDestroyed {
  ~LaunchesWhenDestroyed() {
    sim::launch(fill, dim3(1), dim3(32), nullptr);
    std::fprintf(stderr, "static destructor: cudaDeviceSynchronize returned %d\n", cudaDeviceSynchronize());
  }
};
LaunchesWhenDestroyed launches_when_destroyed;

std::atomic<bool> keep_launching{true};

}  // namespace

int main(int argc, char** argv) {
  std::atexit([] {
    sim::launch(fill, dim3(1), dim3(32), nullptr);
    std::fprintf(stderr, "atexit: cudaDeviceSynchronize returned %d\n", cudaDeviceSynchronize());
  });
  std::thread([] {
    while (keep_launching) sim::launch(fill, dim3(1), dim3(32), nullptr);
  }).detach();
  for (int i = 0; i < 1000; ++i) sim::launch(fill, dim3(1), dim3(32), nullptr);
  std::printf("main done\n");
  std::fflush(stdout);
  if (argc > 1 && std::strcmp(argv[1], "fast") == 0) _exit(3);
  return 0;  // exit while the other thread is still launching
}
// SPDX-License-Identifier: MIT
