// The symbolizer: turns return addresses captured in this process (the shim runs inside the host program)
// into the object file that holds them, the demangled function and the source file:line.
//
// libdw (elfutils) is used when it can be loaded at run time: it reads .symtab (names for programs built
// without -g) and DWARF line tables. Without it, dladdr gives the module and the nearest dynamic symbol, and
// no file:line. The shim gains no link-time dependency and the build needs no libdw headers.
//
// symbolize_inlined() also names the functions inlined at an address (what `addr2line -i` shows), so that the
// shim can tell the user's call from the line inside an inlined launch stub or header template.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace blockrun {

// What a frame's source file is, for choosing the call site (src/callsites/sites.h: classify_source_file).
// The symbolizer classifies each frame once, when it computes it (its answers are cached), so that choosing
// the call site of a logged launch does no string work on file names.
enum class SourceKind : uint8_t {
  Unclassified,  // a frame not made by the symbolizer (built by hand): the call-site rules classify it
  Program,       // the program's own code, or any other file (also: no file known)
  CudaLaunch,    // CUDA's launch code compiled into the program: nvcc's generated files (*.stub.c,
                 // *.cudafe1.cpp) and the runtime's launch templates (cuda_runtime.h, cuda_runtime_api.h,
                 // crt/): never the call site
  CudaLibrary,   // the CUDA Toolkit's other headers, inlined or instantiated into the program: thrust, CUB,
                 // libcu++ and the rest of CCCL: the call site only where no frame is the program's
};

struct Frame {
  uintptr_t address = 0;        // as captured
  std::string module;           // path of the object file, symbolic links resolved (the main program's
                                // too: never ""); "" only when the address is in no object file
  uintptr_t module_offset = 0;  // address - load base of that module
  std::string function;         // demangled; empty when unknown
  std::string file;             // source file from DWARF, empty when unknown
  int line = 0;                 // 0 when unknown
  SourceKind source = SourceKind::Unclassified;  // what `file` is; set on every frame the symbolizer returns
};

class Symbolizer {
 public:
  // libdw: "" = dlopen("libdw.so.1") through the normal search; "off" = never use libdw; anything else =
  // dlopen that path. Nothing is loaded until the first symbolize().
  explicit Symbolizer(std::string libdw);
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // `return_address`: the address is a return address (true for every captured frame): the function and
  // the source line are looked up at address-1, so they name the call, not the instruction after it (which
  // can belong to the next function when the call was the last instruction). Frame.address stays as given;
  // Frame.source is set. Never throws: every failure gives a frame with less detail.
  Frame symbolize(uintptr_t address, bool return_address = true);

  // The logical frames at `address`, innermost first: one per function inlined at that point, then the
  // function that physically contains it. All share address, module and module_offset. The first has the
  // file:line of the address itself (inside the innermost inlined function); each later one has the
  // file:line where the previous one was inlined into it (the inlined subroutine's DW_AT_call_file and
  // DW_AT_call_line). An inlined function is named by its DW_AT_linkage_name, demangled, else by its
  // DW_AT_name qualified with its namespaces and classes and without parameters ("ns::helper"; GCC writes
  // no linkage name for a function of internal linkage); the outermost has the name symbolize() gives.
  // Without libdw, or without DWARF for the address: exactly one frame, equal to symbolize(address,
  // return_address). Every frame's `source` is set (for its own file:line). Never throws.
  std::vector<Frame> symbolize_inlined(uintptr_t address, bool return_address = true);

  // After the first symbolize(): whether libdw is used, and one line saying which (path and version) or why
  // not. Before it, false and "not loaded yet": asking does not load libdw.
  bool has_libdw();
  std::string libdw_status();
  // After the first symbolize(): why libdw could not be used (not found, not a usable libdw, its session
  // failed; the path and the loader's words), or "" where it is used, was turned off ("off") or is not loaded
  // yet.
  std::string libdw_problem();

 private:
  struct Libdw;  // the libdw handle, its functions and the session (symbolize.cpp)

  // Answers are cached per (address, return_address), those of symbolize() and of symbolize_inlined()
  // apart, at most this many frames in all (a symbolize_inlined() answer counts as its number of frames);
  // past it, answers are computed but not kept. A frame takes a few hundred bytes, so the caches stay under
  // about 8 MB whatever the host does (a JIT can produce any number of distinct addresses).
  static constexpr size_t kCacheLimit = 16384;

  void load_locked();
  void symbolize_locked(uintptr_t address, bool return_address, Frame& frame);
  void compute_locked(uintptr_t address, bool return_address, Frame& frame);
  bool symbolize_with_libdw_locked(uintptr_t address, uintptr_t lookup, Frame& frame);
  void symbolize_with_dladdr_locked(uintptr_t address, uintptr_t lookup, Frame& frame);
  // The frames of the functions inlined at `address`, innermost first, then `outermost` with its file:line
  // replaced by the call site; empty when nothing is inlined there or libdw cannot tell.
  std::vector<Frame> inlined_frames_locked(uintptr_t address, bool return_address, const Frame& outermost);

  std::mutex mutex_;  // one lock for everything: libdw's session is not thread-safe
  std::string libdw_request_;
  bool loaded_ = false;
  std::unique_ptr<Libdw> libdw_;  // null when libdw is not used
  std::string libdw_status_ = "libdw not loaded yet (it is loaded on the first symbolize())";
  std::string libdw_problem_;                                           // libdw_problem()
  std::string main_program_;                                            // the real path of the main program
  std::unordered_map<uintptr_t, Frame> cache_[2];                       // [return_address]
  std::unordered_map<uintptr_t, std::vector<Frame>> inlined_cache_[2];  // [return_address]
  size_t cached_frames_ = 0;                                            // in both caches
};

}  // namespace blockrun
// SPDX-License-Identifier: MIT
