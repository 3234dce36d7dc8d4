// Which of the shim's optional driver entry points (src/cuda/driver_features.def) a driver has, and what that
// means for the user: decided from values (the driver's version, which names it has), told as one line of the
// log and a list in the report's start record. The shim asks the driver; `cuda-blockrun --version` too.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace blockrun {

struct DriverFeature {
  const char* entry_point;
  int since;  // the CUDA version that introduced it (12030: CUDA 12.3)
  const char* feature;
  const char* cost;
  const char* fallback;  // "" where there is none
};

// Every row of the table, in its order.
const std::vector<DriverFeature>& driver_features();

struct DriverSupport {
  int version = 0;  // cuDriverGetVersion (12020: CUDA 12.2), 0: no driver or unknown
  std::vector<const DriverFeature*> missing;  // the driver lacks its entry point
};

// Asks `has(entry_point)` for each row; nothing is missing where there is no driver (version 0): there is
// nothing to tell of it but its absence, which the first error says.
DriverSupport check_driver(int version, const std::function<bool(const char* entry_point)>& has);

// "12.2" for 12020.
std::string cuda_version_text(int version);

// The one line the log says, once a process, where something is missing (empty otherwise): what, and what it
// costs or what is used instead.
std::string driver_notice(const DriverSupport& support);

}  // namespace blockrun
// SPDX-License-Identifier: MIT
