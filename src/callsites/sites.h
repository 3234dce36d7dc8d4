// From a captured native stack to what the report shows: the frames symbolized (the shim's own frames
// dropped) and the call site, the first frame outside the shim, the CUDA runtime (also when linked into
// the program, with nvcc's launch stubs), the driver, the CUDA libraries and the CUDA Toolkit's headers
// (thrust, CUB, libcu++): the user's code. The same for Python: the program's own line, not a library's
// or generated code's. Frames passed over as call site stay in the stack.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "callsites/callsite.h"
#include "config/policy.h"
#include "callsites/symbolize.h"

namespace blockrun {

struct Site {
  std::vector<Frame> frames;  // innermost first, without the shim's frames
  int call_site = -1;         // index into frames (choose_call_site); -1 when every frame is CUDA's
};

// The Python frames a report gives for a launch: its call stack's, else the sites kept in the ring.
struct PythonCallSite {
  const PythonFrame* user = nullptr;       // the program's own line
  const PythonFrame* innermost = nullptr;  // set when different from `user` (a framework's frame)
};

// `whole_stack` false: stops after the call site, once it is a frame of the program's own (the frames after
// it are left out).
Site resolve_site(Symbolizer& symbolizer, const NativeStack& stack, const std::string& shim_module,
                  const KernelName* kernel, bool whole_stack = true);

// The call site among symbolized frames (innermost first), as resolve_site chooses it: the first frame that
// is neither CUDA's (is_cuda_frame) nor the CUDA Toolkit's headers (is_toolkit_frame); where there is none,
// the first toolkit-header frame (the program's code nonetheless: thrust's launch inside the program is more
// than nothing); -1 where every frame is CUDA's.
int choose_call_site(const std::vector<Frame>& frames, const KernelName* kernel);

// What a source file is (see SourceKind): CudaLaunch for nvcc's generated files (`*.stub.c`, `*.cudafe1.cpp`)
// and the runtime's launch templates (`cuda_runtime.h`, `cuda_runtime_api.h`, anything under a `crt/`);
// CudaLibrary for the CUDA Toolkit's other headers: under `/usr/local/cuda*/` in an `include/`, under
// `targets/<arch>/include/` (the toolkit's layout wherever it is installed: conda, HPC SDK), or in an
// `include/` directory's `thrust/`, `cub/`, `cuda/` (libcu++, `cuda/std/`), `cccl/` or `nv/`;
// Program otherwise (also for ""). Never Unclassified.
SourceKind classify_source_file(std::string_view file);

// Whether a module (a file path) is part of CUDA: the driver, the runtime, the math and communication
// libraries NVIDIA ships (libcuda, libcudart, libcublas, libcublasLt, libcudnn, libcufft, libcurand,
// libcusparse, libcusolver, libnvrtc, libnvJitLink, libnccl, libnvidia-*).
bool is_cuda_module(std::string_view module);

// Whether a frame belongs to CUDA rather than to the program: a CUDA module, the static runtime linked
// into the program, nvcc's generated launch stubs (the host function named like the kernel,
// `__device_stub__*`, code in `*.cudafe1.stub.c` or `*.cudafe1.cpp`) and the runtime's launch templates in
// CUDA's headers (SourceKind::CudaLaunch).
bool is_cuda_frame(const Frame& frame, const KernelName* kernel);

// Whether a frame is template code of the CUDA Toolkit's headers (thrust, CUB, libcu++, CCCL: the source
// file of the frame, inlined or not, is SourceKind::CudaLibrary). The frame's function may be the user's (a
// header's code inlined into it): what counts is the file its line is in.
bool is_toolkit_frame(const Frame& frame);

// What a Python frame's file is, for choosing the Python line.
enum class PythonFileKind : uint8_t {
  Program,    // the program's own (also "<stdin>", "<console>", "<ipython-input-...>": code typed in)
  Library,    // an installed package (site-packages, dist-packages), the standard library (lib/pythonX.Y/),
              // frozen bootstrap code ("<frozen ...>"), torch/_inductor/, torch/_dynamo/ and Triton's
              // runtime, backends and compiler wherever they are (also a source checkout)
  Generated,  // code made at run time: any other "<...>" pseudo-file ("<string>": exec'd code, such as the
              // launchers Inductor and Triton generate; "<eval_with_key>.N": torch.fx), and the files of
              // torch.compile's cache (a directory `torchinductor_*`, Inductor's default
              // /tmp/torchinductor_<user>, or anything under $TORCHINDUCTOR_CACHE_DIR)
};
// One pass over the path, no allocation: it runs on the launch path with breadcrumbs (per launch, up to the
// first frame of the program).
PythonFileKind classify_python_file(std::string_view file);

// Inductor's cache directory, TORCHINDUCTOR_CACHE_DIR, is read once when the library is loaded (never on the
// launch path); this replaces it (tests; "" for none). Not thread-safe: before any Python line is chosen.
void set_torchinductor_cache_dir(std::string_view directory);

// The Python frame to show as the launch's Python line: the innermost that is the program's own
// (PythonFileKind::Program), not a library's or generated code's; the innermost frame where every frame is
// such. Where that frame's caller is Dynamo's (torch/_dynamo/: a function torch.compile runs in its place,
// whose line is the function's first), the next frame of the program's own after it: the call of the compiled
// function. -1 when there are no frames.
//
// `extent`, where given, says what the choice depended on (PythonSiteCache remembers it under those frames):
// the first `frames` frames of the walk that read `python` (counting those passed over in the gap), and,
// where `to_end`, that the walk found no frame after them (not where it stopped at a bound: which frames the
// bounds leave out is decided by the frames before).
struct PythonChoiceExtent {
  size_t frames = 0;
  bool to_end = false;
};
int python_call_site(const PythonStack& python, PythonChoiceExtent* extent = nullptr);

// "file:line", else "function+0xOFF", else "module+0xOFF".
std::string short_location(const Frame& frame);

}  // namespace blockrun
// SPDX-License-Identifier: MIT
