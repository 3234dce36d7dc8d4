// The process as the start record tells it, filled by the shim at start (process.cpp) and held by the engine.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "cuda/driver_features.h"

namespace blockrun {

// What the start record says about the process, filled by the shim.
struct ProcessInfo {
  long pid = 0;
  long rank = 0;
  bool has_rank = false;  // a launcher's rank variable is set (else `rank` is 0 by default)
  std::string run;        // CUDA_BLOCKRUN_RUN_ID, "" for none
  std::string host;
  std::string name;
  std::vector<std::string> argv;
  std::string shim_version;
  int driver_version = 0;   // cuDriverGetVersion, 0: unknown
  int runtime_version = 0;  // cudaRuntimeGetVersion, 0: unknown
  DriverSupport driver;     // the optional driver entry points it lacks (driver_features.h)
  std::string shim_module;  // the shim's own file: its frames are not the program's
  std::vector<std::pair<std::string, std::string>> configuration;  // variable, effective value
};

}  // namespace blockrun
// SPDX-License-Identifier: MIT
