// The objects loaded into the process (dl_iterate_phdr), for the few places that look one up by its file: the
// shim's search for a CUDA library's real function, a privately loaded libpython, the runtime's version, and
// a module's address ranges for call sites. One loop, so that each says only what it looks for.
#pragma once

#include <link.h>

#include <cstring>
#include <string>
#include <vector>

namespace blockrun {

// A loaded object with a path: its dl_iterate_phdr entry, the path the loader has, and its file name.
struct LoadedObject {
  const dl_phdr_info& info;
  const char* path;
  const char* file;  // after the last '/'
};

// Calls `visit(const LoadedObject&)` for each loaded object with a path (the executable and the vDSO have
// none), in the loader's order, until it returns true. Takes the loader's lock for the walk, as
// dl_iterate_phdr does: never on the launch path. `visit` must not call dlopen, dlclose, dlsym or dladdr:
// they take the loader's other lock, which a dlopen on another thread holds while it waits for the walk's (a
// deadlock, seen on the H100 between the symbolizer's dlopen of libdw and the shim's search for a real
// function). To open what the walk finds, take the paths first (loaded_object_paths).
template <typename Visit>
void visit_loaded_objects(Visit&& visit) {
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        const char* path = info->dlpi_name;
        if (!path || !*path) return 0;
        const char* slash = std::strrchr(path, '/');
        return (*static_cast<Visit*>(data))(LoadedObject{*info, path, slash ? slash + 1 : path}) ? 1 : 0;
      },
      &visit);
}

// The paths of the loaded objects whose file name begins with `prefix`, in the loader's order: for a caller
// that then opens them, once the walk is over (visit_loaded_objects says why not during it).
inline std::vector<std::string> loaded_object_paths(const char* prefix) {
  std::vector<std::string> paths;
  size_t length = std::strlen(prefix);
  visit_loaded_objects([&](const LoadedObject& object) {
    if (std::strncmp(object.file, prefix, length) == 0) paths.emplace_back(object.path);
    return false;
  });
  return paths;
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT
