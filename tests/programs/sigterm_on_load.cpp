// A library that sends SIGTERM to its process when it is loaded. Given as the shim's libdw
// (CUDA_BLOCKRUN_LIBDW), it is loaded while the first error's record is being written (the symbolizer
// loads libdw at its first use): the signal arrives at that moment, every time (issue 17, F4).
#include <signal.h>
#include <unistd.h>

__attribute__((constructor)) static void send_sigterm() {
  kill(getpid(), SIGTERM);
}
// SPDX-License-Identifier: MIT
