// Tests CUDA's stream-capture rules in the simulated driver (driver API, several threads), and graph replay
// with fault injection (ctest sets CUDA_SIM_FAULT=replayed:3).
#include <cuda.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <thread>

#include "check.h"
#include "sim_kernels.h"

namespace {

CUresult in_thread(CUstreamCaptureMode mode, CUresult (*fn)(CUstream), CUstream arg) {
  CUresult r = CUDA_ERROR_UNKNOWN;
  std::thread t([&] {
    CUstreamCaptureMode m = mode;
    cuThreadExchangeStreamCaptureMode(&m);
    r = fn(arg);
  });
  t.join();
  return r;
}

CUstreamCaptureStatus status_of(CUstream s) {
  CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
  CHECK_EQ(cuStreamIsCapturing(s, &st), CUDA_SUCCESS);
  return st;
}

void end_invalidated(CUstream s) {
  CUgraph g = reinterpret_cast<CUgraph>(1);
  CHECK_EQ(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  CHECK(g == nullptr);
}

}  // namespace

int main() {
  CHECK_EQ(cuInit(0), CUDA_SUCCESS);
  CUcontext ctx;
  CHECK_EQ(cuDevicePrimaryCtxRetain(&ctx, 0), CUDA_SUCCESS);
  CHECK_EQ(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
  CUstream s, o;
  CHECK_EQ(cuStreamCreate(&s, 0), CUDA_SUCCESS);
  CHECK_EQ(cuStreamCreate(&o, 0), CUDA_SUCCESS);

  // 1. Global-mode capture: another thread (global mode) synchronizing an unrelated stream gets 900, and the
  //    capture is invalidated.
  CHECK_EQ(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  CHECK_EQ(in_thread(CU_STREAM_CAPTURE_MODE_GLOBAL, cuStreamSynchronize, o),
           CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  CHECK_EQ(status_of(s), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  end_invalidated(s);

  // 2. ... but not after that thread switched to relaxed mode; synchronizing the capturing stream itself
  // still fails.
  CHECK_EQ(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  CHECK_EQ(in_thread(CU_STREAM_CAPTURE_MODE_RELAXED, cuStreamSynchronize, o), CUDA_SUCCESS);
  CHECK_EQ(in_thread(CU_STREAM_CAPTURE_MODE_RELAXED, cuStreamQuery, o), CUDA_SUCCESS);
  CHECK_EQ(status_of(s), CU_STREAM_CAPTURE_STATUS_ACTIVE);
  CHECK_EQ(in_thread(CU_STREAM_CAPTURE_MODE_RELAXED, cuStreamSynchronize, s),
           CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  CHECK_EQ(status_of(s), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  end_invalidated(s);

  // 3. Thread-local capture: other threads are not affected, the capturing thread is.
  CHECK_EQ(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), CUDA_SUCCESS);
  CHECK_EQ(in_thread(CU_STREAM_CAPTURE_MODE_GLOBAL, cuStreamSynchronize, o), CUDA_SUCCESS);
  CHECK_EQ(status_of(s), CU_STREAM_CAPTURE_STATUS_ACTIVE);
  CHECK_EQ(cuStreamSynchronize(o), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  end_invalidated(s);

  // 4. The legacy stream cannot be asked about while a blocking stream captures (906); cuMemAlloc is unsafe.
  CHECK_EQ(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  CUstreamCaptureStatus st;
  CHECK_EQ(cuStreamIsCapturing(nullptr, &st), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
  CHECK_EQ(cuStreamIsCapturing(CU_STREAM_LEGACY, &st), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
  CHECK_EQ(status_of(s), CU_STREAM_CAPTURE_STATUS_ACTIVE);
  CUdeviceptr dp = 0;
  CHECK_EQ(cuMemAlloc_v2(&dp, 64), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  end_invalidated(s);
  CHECK_EQ(cuStreamIsCapturing(nullptr, &st), CUDA_SUCCESS);
  CHECK_EQ(st, CU_STREAM_CAPTURE_STATUS_NONE);

  // 5. Captured work is recorded, not run; cuStreamWriteValue64 is captured too; replays run it, and fault
  //    injection counts replayed launches (the 3rd launch of "replayed" faults).
  CUmodule mod;
  CHECK_EQ(cuModuleLoadData(&mod, "any image"), CUDA_SUCCESS);
  CUfunction f;
  CHECK_EQ(cuModuleGetFunction(&f, mod, "replayed"), CUDA_SUCCESS);
  uint64_t* host = nullptr;
  CHECK_EQ(cuMemHostAlloc(reinterpret_cast<void**>(&host), 8, CU_MEMHOSTALLOC_DEVICEMAP), CUDA_SUCCESS);
  CUdeviceptr dflag;
  CHECK_EQ(cuMemHostGetDevicePointer_v2(&dflag, host, 0), CUDA_SUCCESS);

  CHECK_EQ(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  CHECK_EQ(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr), CUDA_SUCCESS);
  CHECK_EQ(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr), CUDA_SUCCESS);
  CHECK_EQ(cuStreamWriteValue64_v2(s, dflag, 42, 0), CUDA_SUCCESS);
  CHECK_EQ(*host, 0u);
  cuuint64_t id = 0;
  CUgraph cg = nullptr;
  CHECK_EQ(cuStreamGetCaptureInfo_v3(s, &st, &id, &cg, nullptr, nullptr, nullptr), CUDA_SUCCESS);
  CHECK_EQ(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  CHECK(cg != nullptr);
  CUgraph g = nullptr;
  CHECK_EQ(cuStreamEndCapture(s, &g), CUDA_SUCCESS);
  size_t n = 0;
  CHECK_EQ(cuGraphGetNodes(g, nullptr, &n), CUDA_SUCCESS);
  CHECK_EQ(n, 3);
  CUgraphExec ge;
  CHECK_EQ(cuGraphInstantiateWithFlags(&ge, g, 0), CUDA_SUCCESS);
  CHECK_EQ(cuGraphLaunch(ge, s), CUDA_SUCCESS);  // launches 1, 2
  CHECK_EQ(*host, 42u);
  CHECK_EQ(cuStreamSynchronize(s), CUDA_SUCCESS);
  *host = 0;
  CHECK_EQ(cuGraphLaunch(ge, s), CUDA_SUCCESS);  // launch 3 faults: the write behind it never happens
  CHECK_EQ(*host, 0u);
  CHECK_EQ(cuStreamSynchronize(o), CUDA_SUCCESS);
  CHECK_EQ(cuStreamSynchronize(s), CUDA_ERROR_ILLEGAL_ADDRESS);
  CHECK_EQ(cuStreamBeginCapture_v2(o, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_ILLEGAL_ADDRESS);

  sim::write_stats();
  std::map<std::string, long> m;
  const char* env = std::getenv("CUDA_SIM_STATS");  // set by ctest
  CHECK(env != nullptr);
  std::ifstream in(env ? env : "");
  std::string line;
  while (std::getline(in, line))
    m[line.substr(0, line.find('='))] = std::stol(line.substr(line.find('=') + 1));
  CHECK_EQ(m["launches"], 4);
  CHECK_EQ(m["captures_invalidated"], 4);
  CHECK_EQ(m["synchronizes_during_capture"], 4);
  CHECK_EQ(m["faults_injected"], 1);
  CHECK_EQ(m["faults_surfaced"], 1);
  return simtest::finish();
}
