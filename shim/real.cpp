// Finding the real CUDA functions behind the shim's wrappers (see real.h).
#include "real.h"

#include <dlfcn.h>
#include <link.h>

#include <cstring>

namespace blockrun::shim {

namespace {

const char* library_prefix(Family family) {
  switch (family) {
    case Family::Runtime:
      return "libcudart.so";
    case Family::Driver:
      return "libcuda.so";
    case Family::Cublas:
      return "libcublas.so";
    case Family::CublasLt:
      return "libcublasLt.so";
  }
  return "";
}

struct Search {
  const char* name;
  const char* prefix;
  void* found;
};

int search_object(struct dl_phdr_info* info, size_t, void* data) {
  auto* search = static_cast<Search*>(data);
  const char* path = info->dlpi_name;
  if (!path || !*path) return 0;
  const char* slash = std::strrchr(path, '/');
  const char* file = slash ? slash + 1 : path;
  if (std::strncmp(file, search->prefix, std::strlen(search->prefix)) != 0) return 0;
  // RTLD_NOLOAD: a handle to what is already there, never a new load.
  void* handle = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
  if (!handle) return 0;
  void* address = real_dlsym(handle, search->name);
  dlclose(handle);
  if (address && !inside_shim(address)) {
    search->found = address;
    return 1;
  }
  return 0;
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

void* find_real(const char* name, Family family) {
  void* address = real_dlsym(RTLD_NEXT, name);
  if (address && !inside_shim(address)) return pinned(address);
  Search search{name, library_prefix(family), nullptr};
  dl_iterate_phdr(search_object, &search);
  return pinned(search.found);
}

}  // namespace blockrun::shim
