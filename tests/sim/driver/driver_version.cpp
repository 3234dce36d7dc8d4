// The CUDA version a copy of the simulated driver plays (cuDriverGetVersion): 13000 is driver 580. The
// driver's other code is compiled once for both copies (sim_driver_objects, CMakeLists.txt); only this file
// is compiled for each, sim_cuda_12020's with SIM_DRIVER_VERSION=12020 (driver 535).
#ifndef SIM_DRIVER_VERSION
#define SIM_DRIVER_VERSION 13000
#endif

int sim_built_driver_version() {
  return SIM_DRIVER_VERSION;
}
// SPDX-License-Identifier: MIT
