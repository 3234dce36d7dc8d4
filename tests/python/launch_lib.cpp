// A library that launches simulated kernels (as nvcc's <<<>>> does), loaded into CPython with ctypes by
// test_report_python_line.py: the launches then come from Python, with or without the GIL.
#include <cuda_runtime_api.h>

#include "sim_kernels.h"

SIM_KERNEL(fill, "_Z4fillPfif");
SIM_KERNEL(stencil, "_Z7stencilPfPKfix");

extern "C" __attribute__((visibility("default"))) int launch_fill() {
  return static_cast<int>(sim::launch(fill, dim3(64), dim3(128), nullptr));
}

extern "C" __attribute__((visibility("default"))) int launch_stencil() {
  return static_cast<int>(sim::launch(stencil, dim3(64), dim3(128), nullptr));
}

// Where an asynchronous fault surfaces, long after its launch.
extern "C" __attribute__((visibility("default"))) int synchronize() {
  return static_cast<int>(cudaDeviceSynchronize());
}

// A graph made by stream capture, from Python: begin, the captured launches (launch_fill, launch_stencil on
// the capture stream), end and instantiate, replays each waited for.
namespace {
cudaStream_t g_capture_stream = nullptr;
cudaGraphExec_t g_exec = nullptr;
}  // namespace

extern "C" __attribute__((visibility("default"))) int begin_capture() {
  if (!g_capture_stream) cudaStreamCreate(&g_capture_stream);
  return static_cast<int>(cudaStreamBeginCapture(g_capture_stream, cudaStreamCaptureModeGlobal));
}

extern "C" __attribute__((visibility("default"))) int capture_fill() {
  return static_cast<int>(sim::launch(fill, dim3(64), dim3(128), g_capture_stream));
}

extern "C" __attribute__((visibility("default"))) int capture_stencil() {
  return static_cast<int>(sim::launch(stencil, dim3(64), dim3(128), g_capture_stream));
}

extern "C" __attribute__((visibility("default"))) int end_capture() {
  cudaGraph_t graph = nullptr;
  cudaError_t result = cudaStreamEndCapture(g_capture_stream, &graph);
  if (result != cudaSuccess) return static_cast<int>(result);
  return static_cast<int>(cudaGraphInstantiate(&g_exec, graph, 0));
}

extern "C" __attribute__((visibility("default"))) int replay() {
  cudaError_t result = cudaGraphLaunch(g_exec, g_capture_stream);
  if (result != cudaSuccess) return static_cast<int>(result);
  return static_cast<int>(cudaStreamSynchronize(g_capture_stream));
}
// SPDX-License-Identifier: MIT
