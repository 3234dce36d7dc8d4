// Kernel names as the program looked its kernels up (cuLibraryGetKernel, cuModuleGetFunction), for a driver
// older than CUDA 12.3, which has no cuKernelGetName/cuFuncGetName (src/cuda/driver_features.def): launches
// are then still named. Kept only where the driver lacks a name query; its state is its own.
#pragma once

namespace blockrun::shim {

// Whether the loaded driver lacks cuKernelGetName or cuFuncGetName (asked once, after the driver is loaded).
bool kernel_names_needed();

// A lookup that succeeded: `handle` (a CUkernel or CUfunction) is the kernel `name`. Not on the launch path.
void remember_kernel_name(const void* handle, const char* name);

// The name `handle` was looked up by, or nullptr.
const char* remembered_kernel_name(const void* handle);

}  // namespace blockrun::shim
// SPDX-License-Identifier: MIT
