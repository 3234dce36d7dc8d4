// The objects loaded into the process (dl_iterate_phdr), for the few places that look one up by its file: the
// shim's search for a CUDA library's real function, a privately loaded libpython, the runtime's version, and
// a module's address ranges for call sites. One loop, so that each says only what it looks for.
#pragma once

#include <link.h>

#include <cstring>

namespace blockrun {

// A loaded object with a path: its dl_iterate_phdr entry, the path the loader has, and its file name.
struct LoadedObject {
  const dl_phdr_info& info;
  const char* path;
  const char* file;  // after the last '/'
};

// Calls `visit(const LoadedObject&)` for each loaded object with a path (the executable and the vDSO have
// none), in the loader's order, until it returns true. Takes the loader's lock for the walk, as
// dl_iterate_phdr does: never on the launch path.
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

}  // namespace blockrun
// SPDX-License-Identifier: MIT
