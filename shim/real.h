// Finding the real CUDA functions behind the shim's wrappers, at run time: the shim links no CUDA
// library, and a process may load CUDA late (dlopen), privately (RTLD_LOCAL) or never.
#pragma once

#include "call_values.h"

namespace blockrun {
struct LoadedObject;  // callsites/loaded_objects.h, included where objects are visited
}  // namespace blockrun

namespace blockrun::shim {

// Returns the address of `name` in the CUDA library of `layer`, never one inside the shim itself nor inside
// another install's copy of it (is_shim_copy: that copy's wrapper would count every call again), or nullptr
// where no loaded library has it. Tries dlsym(RTLD_NEXT) first (the usual case: the library is in the global
// scope), then every loaded object whose file name is that layer's library (libcudart.so*, libcuda.so*,
// libcublas.so*), which also finds libraries loaded with RTLD_LOCAL. Never loads a library.
void* find_real(const char* name, Layer layer);

// The C library's dlsym itself, never the shim's interposer: lookups the shim makes for itself must
// not be answered with its own wrappers.
void* real_dlsym(void* handle, const char* name);

// Whether `address` lies inside the shim's own shared object.
bool inside_shim(const void* address);

// Whether a loaded object is a copy of the shim (this one, or another install's loaded beside it: issue 40,
// N14): a libcuda_blockrun*.so that defines cuLaunchKernel, which no other object of ours does (the rebind
// library). Known without an exported marker: the shim exports nothing but its hooks.
bool is_shim_copy(const LoadedObject& object);

}  // namespace blockrun::shim
// SPDX-License-Identifier: MIT
