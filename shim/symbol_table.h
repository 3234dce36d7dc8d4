// Pointing a loaded library's own exported symbol at another function, in its dynamic symbol table: what a
// shim loaded after start (the Python door) does to libcuda, so that every later dlsym(libcuda, NAME) and
// every later binding to libcuda's NAME gets the shim's wrapper, as LD_PRELOAD would have given it
// (docs/python.md).
#pragma once

#include <link.h>

namespace blockrun::shim {

// Sets the dynamic symbol `name` of the library opened as `handle` to resolve to `target` from now on.
// Returns false (and changes nothing) where the library has no such defined symbol or its table cannot be
// written.
bool point_symbol_at(void* handle, const char* name, void* target);

// Whether the loaded object `object` (dl_iterate_phdr's) defines the function `name` in its own dynamic
// symbol table (not through its dependencies, as a dlsym on its handle would answer). Read from its mapped
// table: no dlopen, so usable from a constructor while the loader starts the program.
bool defines_function(const dl_phdr_info& object, const char* name);

}  // namespace blockrun::shim
// SPDX-License-Identifier: MIT
