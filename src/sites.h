// From a captured native stack to what the report shows: the frames symbolized (the shim's own frames
// dropped) and the call site, the first frame outside the shim, the CUDA runtime (also when linked into
// the program, with nvcc's launch stubs), the driver and the CUDA libraries: the user's code.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "callsite.h"
#include "policy.h"
#include "symbolize.h"

namespace blockrun {

struct Site {
  std::vector<Frame> frames;  // innermost first, without the shim's frames
  int call_site = -1;         // index into frames; -1 when every frame is CUDA's
};

// `whole_stack` false: stops after the call site (the frames after it are left out).
Site resolve_site(Symbolizer& symbolizer, const NativeStack& stack, const std::string& shim_module,
                  const KernelName* kernel, bool whole_stack = true);

// Whether a module (a file path) is part of CUDA: the driver, the runtime, the math and communication
// libraries NVIDIA ships (libcuda, libcudart, libcublas, libcublasLt, libcudnn, libcufft, libcurand,
// libcusparse, libcusolver, libnvrtc, libnvJitLink, libnccl, libnvidia-*).
bool is_cuda_module(std::string_view module);

// Whether a frame belongs to CUDA rather than to the program: a CUDA module, the static runtime linked
// into the program, nvcc's generated launch stubs (the host function named like the kernel,
// `__device_stub__*`, code in `*.cudafe1.stub.c`) and the runtime's launch templates in CUDA's headers.
bool is_cuda_frame(const Frame& frame, const KernelName* kernel);

// The Python frame to show as the launch's Python line: the innermost that is the program's own, not an
// installed package's (site-packages, dist-packages), the standard library's (lib/pythonX.Y) or frozen
// bootstrap code; the innermost frame where every frame is such. -1 when there are no frames.
int python_call_site(const PythonStack& python);

// "file:line", else "function+0xOFF", else "module+0xOFF".
std::string short_location(const Frame& frame);

}  // namespace blockrun
