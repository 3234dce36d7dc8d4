// Tests of the simulated runtime without faults: versions, memory, launch validation, last-error rules,
// names, capture.
#include <cuda_runtime_api.h>

#include <cstring>
#include <vector>

#include "check.h"
#include "sim_kernels.h"

SIM_KERNEL(stencil, "_Z7stencilPfix");

extern "C" cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t);

static int g_host_calls = 0;
static void host_cb(void* p) {
  ++*static_cast<int*>(p);
}

int main() {
  int v = 0;
  CHECK_EQ(cudaRuntimeGetVersion(&v), cudaSuccess);
  CHECK_EQ(v, 13000);
  CHECK_EQ(cudaDriverGetVersion(&v), cudaSuccess);
  CHECK_EQ(v, 13000);
  CHECK_EQ(cudaGetDeviceCount(&v), cudaSuccess);
  CHECK_EQ(v, 1);
  CHECK_EQ(cudaSetDevice(1), cudaErrorInvalidDevice);
  CHECK_EQ(cudaGetLastError(), cudaErrorInvalidDevice);
  CHECK_EQ(cudaGetLastError(), cudaSuccess);

  // Memory round trip.
  float* d = nullptr;
  CHECK_EQ(cudaMalloc(reinterpret_cast<void**>(&d), 64 * sizeof(float)), cudaSuccess);
  std::vector<float> h(64, 3.0f), back(64, 0.0f);
  CHECK_EQ(cudaMemcpy(d, h.data(), 64 * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  CHECK_EQ(cudaMemcpy(back.data(), d, 64 * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  CHECK(back == h);
  CHECK_EQ(cudaMemset(d, 0, 64 * sizeof(float)), cudaSuccess);
  CHECK_EQ(cudaMemcpy(back.data(), d, 64 * sizeof(float), cudaMemcpyDefault), cudaSuccess);
  CHECK_EQ(back[10], 0.0f);
  // Outside any allocation, or past its end: invalid argument at once.
  CHECK_EQ(cudaMemcpy(h.data(), h.data(), 4, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
  CHECK_EQ(cudaMemcpy(d, h.data(), 65 * sizeof(float), cudaMemcpyHostToDevice), cudaErrorInvalidValue);
  CHECK_EQ(cudaPeekAtLastError(), cudaErrorInvalidValue);
  CHECK_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  CHECK_EQ(cudaGetLastError(), cudaSuccess);
  void* z = reinterpret_cast<void*>(1);
  CHECK_EQ(cudaMalloc(&z, 0), cudaSuccess);
  CHECK(z == nullptr);

  // Launch validation: 2048 threads per block or an empty grid fail at once with "invalid argument".
  CHECK_EQ(sim::launch(stencil, dim3(1), dim3(2048)), cudaErrorInvalidValue);
  CHECK_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  CHECK_EQ(cudaGetLastError(), cudaSuccess);
  CHECK_EQ(sim::launch(stencil, dim3(0), dim3(32)), cudaErrorInvalidValue);
  CHECK_EQ(sim::launch(stencil, dim3(1), dim3(32, 32, 2)), cudaErrorInvalidValue);
  CHECK_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  CHECK_STR(cudaGetErrorName(cudaErrorInvalidValue), "cudaErrorInvalidValue");
  CHECK_STR(cudaGetErrorString(cudaErrorInvalidValue), "invalid argument");

  // Every launch door.
  cudaStream_t s = nullptr;
  CHECK_EQ(cudaStreamCreate(&s), cudaSuccess);
  CHECK_EQ(sim::launch(stencil, dim3(4), dim3(128), s), cudaSuccess);
  CHECK_EQ(sim::launch_ptsz(stencil, dim3(4), dim3(128)), cudaSuccess);
  void* args[1] = {nullptr};
  CHECK_EQ(cudaLaunchKernel(reinterpret_cast<const void*>(stencil), dim3(1), dim3(1), args, 0, s),
           cudaSuccess);
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(2);
  cfg.blockDim = dim3(64);
  cfg.stream = s;
  CHECK_EQ(cudaLaunchKernelExC(&cfg, reinterpret_cast<const void*>(stencil), args), cudaSuccess);
  CHECK_EQ(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(stencil), dim3(2), dim3(64), args, 0, s),
           cudaSuccess);
  CHECK_EQ(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(stencil), dim3(100000), dim3(1024), args,
                                       0, s),
           cudaErrorCooperativeLaunchTooLarge);
  CHECK_EQ(cudaLaunchKernel(reinterpret_cast<const void*>(&host_cb), dim3(1), dim3(1), args, 0, s),
           cudaErrorInvalidDeviceFunction);
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  CHECK_EQ(cudaStreamSynchronize_ptsz(nullptr), cudaSuccess);
  CHECK_EQ(cudaStreamQuery(s), cudaSuccess);  // work completes at once: never cudaErrorNotReady

  // Names: mangled, from the host stub or from the kernel handle.
  const char* name = nullptr;
  CHECK_EQ(cudaFuncGetName(&name, reinterpret_cast<const void*>(stencil)), cudaSuccess);
  CHECK_STR(name, "_Z7stencilPfix");
  cudaKernel_t k = nullptr;
  CHECK_EQ(cudaGetKernel(&k, reinterpret_cast<const void*>(stencil)), cudaSuccess);
  name = nullptr;
  CHECK_EQ(cudaFuncGetName(&name, reinterpret_cast<const void*>(k)), cudaSuccess);
  CHECK_STR(name, "_Z7stencilPfix");
  CHECK_EQ(cudaLaunchKernel(reinterpret_cast<const void*>(k), dim3(1), dim3(1), args, 0, s), cudaSuccess);
  cudaFunction_t fn = nullptr;
  CHECK_EQ(cudaGetFuncBySymbol(&fn, reinterpret_cast<const void*>(stencil)), cudaSuccess);
  CHECK(fn != nullptr);

  // Host functions run in stream order.
  CHECK_EQ(cudaLaunchHostFunc(s, host_cb, &g_host_calls), cudaSuccess);
  CHECK_EQ(g_host_calls, 1);

  // Events.
  cudaEvent_t e = nullptr;
  CHECK_EQ(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), cudaSuccess);
  CHECK_EQ(cudaEventRecord(e, s), cudaSuccess);
  CHECK_EQ(cudaEventQuery(e), cudaSuccess);
  CHECK_EQ(cudaEventSynchronize(e), cudaSuccess);

  // Capture: launches are recorded, not run; the graph replays them.
  CHECK_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  CHECK_EQ(cudaStreamIsCapturing(s, &st), cudaSuccess);
  CHECK_EQ(st, cudaStreamCaptureStatusActive);
  CHECK_EQ(sim::launch(stencil, dim3(1), dim3(32), s), cudaSuccess);
  CHECK_EQ(cudaLaunchHostFunc(s, host_cb, &g_host_calls), cudaSuccess);
  CHECK_EQ(g_host_calls, 1);
  cudaGraph_t g = nullptr;
  CHECK_EQ(cudaStreamEndCapture(s, &g), cudaSuccess);
  CHECK(g != nullptr);
  cudaGraphExec_t ge = nullptr;
  CHECK_EQ(cudaGraphInstantiate(&ge, g, 0), cudaSuccess);
  CHECK_EQ(cudaGraphLaunch(ge, s), cudaSuccess);
  CHECK_EQ(g_host_calls, 2);
  CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  CHECK_EQ(cudaGraphExecDestroy(ge), cudaSuccess);
  CHECK_EQ(cudaGraphDestroy(g), cudaSuccess);

  // A synchronize of the capturing stream itself fails and invalidates the capture.
  CHECK_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed), cudaSuccess);
  CHECK_EQ(cudaStreamSynchronize(s), cudaErrorStreamCaptureUnsupported);
  CHECK_STR(cudaGetErrorString(cudaErrorStreamCaptureUnsupported),
            "operation not permitted when stream is capturing");
  CHECK_EQ(cudaStreamIsCapturing(s, &st), cudaSuccess);
  CHECK_EQ(st, cudaStreamCaptureStatusInvalidated);
  g = reinterpret_cast<cudaGraph_t>(1);
  CHECK_EQ(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
  CHECK(g == nullptr);
  CHECK_EQ(cudaGetLastError(), cudaErrorStreamCaptureInvalidated);

  CHECK_EQ(cudaEventDestroy(e), cudaSuccess);
  CHECK_EQ(cudaStreamDestroy(s), cudaSuccess);
  CHECK_EQ(cudaFree(d), cudaSuccess);
  CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
  CHECK_EQ(cudaGetLastError(), cudaSuccess);
  return simtest::finish();
}
// SPDX-License-Identifier: MIT
