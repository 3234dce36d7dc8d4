// A C++ program that leans on its own C++ runtime while the shim, which carries a private copy of libstdc++
// and libgcc linked in, is preloaded: exceptions thrown and caught across functions and threads (through
// the unwinder), iostreams, a std::string stream and std::thread, around launches of the simulated stack's
// kernels (tests/sim), so that the shim's engine and its own runtime are at work too. Prints each result,
// then `done`; exits 0. The shim must change none of it (tests/integration/wrapper_cli_test.cpp).
#include <cuda_runtime_api.h>

#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "sim_kernels.h"

SIM_KERNEL(fill, "_Z4fillPfif");

namespace {

// Thrown two frames below the catch, so that unwinding crosses frames.
[[noreturn]] void throw_from_below(int launch) {
  throw std::runtime_error("thrown after launch " + std::to_string(launch));
}
int launch_then_throw(int launch) {
  if (sim::launch(fill, dim3(4), dim3(32), nullptr) != cudaSuccess) return -1;
  throw_from_below(launch);
}

}  // namespace

int main() {
  for (int launch = 1; launch <= 3; ++launch) {
    try {
      launch_then_throw(launch);
    } catch (const std::runtime_error& error) {
      std::cout << "caught: " << error.what() << std::endl;
    }
  }
  std::string from_thread;
  std::thread worker([&] {
    try {
      sim::launch(fill, dim3(4), dim3(32), nullptr);
      throw std::logic_error("thrown in a thread");
    } catch (const std::exception& error) {
      from_thread = error.what();
    }
  });
  worker.join();
  std::cout << "thread caught: " << from_thread << "\n";
  std::ostringstream text;
  text << "synchronize returned " << cudaDeviceSynchronize();
  std::cout << text.str() << "\n"
            << "done" << std::endl;
  return 0;
}
// SPDX-License-Identifier: MIT
