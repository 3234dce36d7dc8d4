// Finding the real CUDA functions behind the shim's wrappers (see real.h).
#include "real.h"

#include <dlfcn.h>
#include <link.h>

#include <cstring>
#include <string>

#include "callsites/loaded_objects.h"
#include "symbol_table.h"

namespace blockrun::shim {

namespace {

const char* library_prefix(Layer layer) {
  switch (layer) {
    case Layer::Runtime:
      return "libcudart.so";
    case Layer::Driver:
      return "libcuda.so";
    case Layer::Cublas:
      return "libcublas.so";
    case Layer::CublasLt:
      return "libcublasLt.so";
  }
  return "";
}

}  // namespace

bool inside_shim(const void* address) {
  static const void* own_base = [] {
    Dl_info info{};
    return dladdr(reinterpret_cast<const void*>(&inside_shim), &info) ? info.dli_fbase : nullptr;
  }();
  Dl_info info{};
  return dladdr(address, &info) && info.dli_fbase == own_base;
}

namespace {

constexpr char kShimFilePrefix[] = "libcuda_blockrun";

// Whether `address` lies inside another install's copy of the shim (a program preloading two of them): its
// wrapper is skipped for the real function behind it, so that it never sees this shim's calls.
bool inside_other_shim_copy(const void* address) {
  Dl_info info{};
  if (!dladdr(address, &info) || !info.dli_fname) return false;
  const char* slash = std::strrchr(info.dli_fname, '/');
  if (std::strncmp(slash ? slash + 1 : info.dli_fname, kShimFilePrefix, sizeof(kShimFilePrefix) - 1) != 0)
    return false;
  bool copy = false;
  visit_loaded_objects([&](const LoadedObject& object) {
    if (object.info.dlpi_addr != reinterpret_cast<ElfW(Addr)>(info.dli_fbase)) return false;
    copy = is_shim_copy(object);
    return true;
  });
  return copy;
}

// Keeps the object holding `address` loaded for good (RTLD_NODELETE): the shim caches the address, and a
// program that dlcloses libcuda or libcudart (then perhaps loads it again elsewhere) must not leave the shim
// calling into unmapped memory. The only change the program could see: the library's memory stays mapped
// (glibc already never unloads a library that registered thread-local destructors, as CUDA's do).
void* pinned(void* address) {
  Dl_info info{};
  if (!address || !dladdr(address, &info) || !info.dli_fname) return address;
  if (void* handle = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE)) dlclose(handle);
  return address;
}

}  // namespace

bool is_shim_copy(const LoadedObject& object) {
  return std::strncmp(object.file, kShimFilePrefix, sizeof(kShimFilePrefix) - 1) == 0 &&
         std::strstr(object.file, ".so") && defines_function(object.info, "cuLaunchKernel");
}

void* find_real(const char* name, Layer layer) {
  void* address = real_dlsym(RTLD_NEXT, name);
  if (address && !inside_shim(address) && !inside_other_shim_copy(address)) return pinned(address);
  // A library loaded privately (RTLD_LOCAL) is not in RTLD_NEXT's scope: look in each one of that layer,
  // opened once the loader's walk is over (loaded_object_paths; never inside it: a deadlock with a dlopen
  // elsewhere).
  for (const std::string& path : loaded_object_paths(library_prefix(layer))) {
    // RTLD_NOLOAD: a handle to what is already there, never a new load (nullptr: it was unloaded meanwhile).
    void* handle = dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
    if (!handle) continue;
    void* found = real_dlsym(handle, name);
    dlclose(handle);
    if (found && !inside_shim(found)) return pinned(found);
  }
  return nullptr;
}

}  // namespace blockrun::shim
// SPDX-License-Identifier: MIT
