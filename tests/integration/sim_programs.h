// What the integration tests run, and how: the wrapper, the shim, the simulated CUDA stack's libraries and
// the main test program (paths from CMake), and a program run alone on the simulated stack or under the
// wrapper.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "run_process.h"

namespace blockrun::testing {

using Env = std::map<std::string, std::string>;

const std::string kShim = CUDA_BLOCKRUN_SHIM;
const std::string kWrapper = CUDA_BLOCKRUN_WRAPPER;
const std::string kApp = CUDA_BLOCKRUN_APP;  // tests/programs/cuda_app.cpp: `cuda_app SCENARIO`
const std::string kSimLib = CUDA_BLOCKRUN_SIM_LIBDIR;
// tests/programs/concurrent_app.cpp: `concurrent_app threads N M | streams K | many L`, its launches on lines
// marked `// FAULT-LINE <kernel>`.
const std::string kConcurrentApp = CUDA_BLOCKRUN_CONCURRENT_APP;
const std::string kConcurrentAppSource = CUDA_BLOCKRUN_SOURCE_DIR "/tests/programs/concurrent_app.cpp";

// The simulated driver surfaces a device fault at the program's next call that touches the device, as the
// H200 does once the faulting kernel has finished (CUDA_SIM_FAULT_SURFACES=next-call, tests/sim/README.md).
// A test about a kernel still running when the program next waits (several launches in flight before a
// synchronize, suspects, the error first seen by a synchronize) adds this entry to its environment: the fault
// then surfaces only at a wait that covers its stream.
const Env::value_type kSurfaceAtSync = {"CUDA_SIM_FAULT_SURFACES", "sync"};

// `command` alone on the simulated stack.
inline ProcessResult run_alone(const std::vector<std::string>& command, Env env) {
  env["LD_LIBRARY_PATH"] = kSimLib;
  return run_process(command, env);
}

// `command` under the wrapper with `options`, as a user runs it, on the simulated stack.
inline ProcessResult run_wrapped(const std::vector<std::string>& options,
                                 const std::vector<std::string>& command, Env env) {
  env["LD_LIBRARY_PATH"] = kSimLib;
  std::vector<std::string> argv = {kWrapper};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.push_back("--");
  argv.insert(argv.end(), command.begin(), command.end());
  return run_process(argv, env);
}

}  // namespace blockrun::testing
// SPDX-License-Identifier: MIT
