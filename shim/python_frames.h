// The innermost Python frames of the thread that launches a CUDA kernel, read on the launch path
// (src/callsites/callsite.h holds the result). The shim builds without Python headers and links no libpython:
// CPython is found at run time, in whatever form the host process has it (a python executable that
// exports its symbols, libpython3.x.so, an embedding program that loads it late), or not at all.
#pragma once

#include "callsites/callsite.h"

namespace blockrun {
class PythonSiteCache;  // python_site_cache.h: the files that read a site include it
struct PythonLaunchSite;
}  // namespace blockrun

namespace blockrun::shim {

// Fills `out` with the innermost Python frames (file, line, function) of the calling thread, innermost
// first. Safe to call from any thread at any time, with or without the GIL, also while CPython is not
// loaded, is initializing or finalizing: never blocks, never takes the GIL, never raises or clears a
// Python exception, and without the GIL never allocates, never calls into the Python allocator and never
// touches a reference count.
//
//   NoPython       no initialized CPython in the process (costs a few ns: the symbols are looked for
//                  again at most once a second)
//   NoThreadState  the thread has no Python thread state (a C++ worker thread)
//   Captured       frames[0..count): with the GIL, through the public C API (CPython 3.9+; 3.8 reads its
//                  frame objects); without it, read from the thread's own frames, which cannot change
//                  while the thread is in C code (CPython 3.8-3.13; `method` names the layout)
//   Unavailable    CPython is finalizing, or its frames cannot be read safely (another version without the
//                  GIL, a failed sanity check); `reason` says which
// Function names are co_qualname on CPython 3.11+ (`Linear.forward`), co_name before.
void read_python_stack(PythonStack* out);

// The calling thread's Python line as a launch record keeps it: the numbers, in cache.sites(), of the frame
// python_call_site chooses and of the innermost one. Safe as read_python_stack is. On CPython 3.8-3.13,
// with or without the GIL, the frames are walked in place reading a few words of each and looked up in
// `cache` (no allocation, no lock, no text copied: out->cached); only a walk the cache does not know is read
// in full into `scratch`, without the public C API even with the GIL, and remembered (`scratch`'s frames are
// written only then). On 3.12+ the first full read also asks CPython (Py_AddPendingCall, once a process) to
// have the main thread register a code watcher, after which a frame's words are its instruction pointer alone
// (shim/python/line_keys.cpp, "lines keyed by instruction pointers"). (On 3.8-3.11, with no co_version to
// tell a code object from the next at its address, a frame's words include a hash of its code object's file,
// function and line table: a few short texts hashed a frame.) Another version with the GIL: the public C API,
// every time.
void read_python_site(PythonSiteCache& cache, PythonStack* scratch, PythonLaunchSite* out);

// Whether the answer of both functions above is NoPython without looking: no CPython found in the process,
// and not this thread's turn to read the clock and look again (a few instructions; it counts the turn). The
// launch wrappers ask it for every launch with breadcrumbs (LaunchRequest::no_python), so that a C++ program
// does not pay the engine's call for a line it cannot have.
bool no_python_yet();

// How many launches' Python lines read_python_site has read in full (the cache did not know the walk) since
// the process began: the benchmark shim's tallies show it (shim/bench_switch.h), to tell a program that pays
// the full read often from one that pays the walk.
uint64_t python_lines_read_in_full();

// Whether read_python_site keys lines by the frames' instruction pointers alone (CPython 3.12+, once the code
// watcher it asks for at the first full read is registered, and until it gives that up): for tests and the
// benchmark shim.
bool python_lines_keyed_by_instruction_pointers();

}  // namespace blockrun::shim
// SPDX-License-Identifier: MIT
