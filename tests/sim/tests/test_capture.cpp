// Tests CUDA's stream-capture rules in the simulated driver (driver API, several threads), and graph replay
// with fault injection (ctest sets CUDA_SIM_FAULT=replayed:3).
#include <cuda.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

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

std::vector<int> g_order;  // host nodes run, in order
void note(void* value) {
  g_order.push_back(*static_cast<int*>(value));
}

cuuint64_t capture_id_of(CUstream s, CUgraph* graph = nullptr) {
  CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
  cuuint64_t id = 0;
  CHECK_EQ(cuStreamGetCaptureInfo_v3(s, &st, &id, graph, nullptr, nullptr, nullptr), CUDA_SUCCESS);
  CHECK_EQ(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  return id;
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

  // 5. Cross-stream capture: a stream waiting on an event recorded in a running capture joins it (same id,
  //    graph, mode and thread); the nodes of both streams go into the one graph in the order queued, and
  //    ending the capture on the origin stream ends it for the joined stream too.
  CUstream b, c;
  CHECK_EQ(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CHECK_EQ(cuStreamCreate(&c, 0), CUDA_SUCCESS);
  CUevent fork_ev, join_ev, plain_ev;
  CHECK_EQ(cuEventCreate(&fork_ev, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  CHECK_EQ(cuEventCreate(&join_ev, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  CHECK_EQ(cuEventCreate(&plain_ev, 0), CUDA_SUCCESS);
  uint64_t* crumb = nullptr;
  CHECK_EQ(cuMemHostAlloc(reinterpret_cast<void**>(&crumb), 8, CU_MEMHOSTALLOC_DEVICEMAP), CUDA_SUCCESS);
  CUdeviceptr dcrumb;
  CHECK_EQ(cuMemHostGetDevicePointer_v2(&dcrumb, crumb, 0), CUDA_SUCCESS);
  static int values[] = {1, 2, 3, 4, 5};
  CHECK_EQ(cuStreamWaitEvent(b, fork_ev, 0), CUDA_SUCCESS);  // never recorded, outside capture: a no-op
  CHECK_EQ(cuStreamWaitEvent(b, fork_ev, 2), CUDA_ERROR_INVALID_VALUE);
  CHECK_EQ(cuStreamWaitEvent(b, fork_ev, CU_EVENT_WAIT_EXTERNAL), CUDA_ERROR_INVALID_VALUE);
  CHECK_EQ(cuStreamWaitEvent(b, nullptr, 0), CUDA_ERROR_INVALID_HANDLE);

  CHECK_EQ(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  CHECK_EQ(cuLaunchHostFunc(s, note, &values[0]), CUDA_SUCCESS);
  CHECK_EQ(cuEventRecord(fork_ev, s), CUDA_SUCCESS);
  CHECK_EQ(status_of(b), CU_STREAM_CAPTURE_STATUS_NONE);
  CHECK_EQ(cuStreamWaitEvent(b, fork_ev, 0), CUDA_SUCCESS);  // the fork: b joins s's capture
  CHECK_EQ(status_of(b), CU_STREAM_CAPTURE_STATUS_ACTIVE);
  CUgraph graph_s = nullptr, graph_b = nullptr;
  const cuuint64_t id_s = capture_id_of(s, &graph_s), id_b = capture_id_of(b, &graph_b);
  CHECK(id_s != 0);
  CHECK_EQ(id_b, id_s);
  CHECK(graph_b == graph_s);
  CHECK_EQ(cuLaunchHostFunc(b, note, &values[1]), CUDA_SUCCESS);  // the branches, interleaved
  CHECK_EQ(cuLaunchHostFunc(s, note, &values[2]), CUDA_SUCCESS);
  CHECK_EQ(cuStreamWriteValue64_v2(b, dcrumb, 7, 0), CUDA_SUCCESS);
  CHECK_EQ(cuLaunchHostFunc(b, note, &values[3]), CUDA_SUCCESS);
  CHECK(g_order.empty());  // recorded, not run
  CHECK_EQ(*crumb, 0u);
  CHECK_EQ(cuEventRecord(join_ev, b), CUDA_SUCCESS);
  CHECK_EQ(cuStreamWaitEvent(s, join_ev, 0), CUDA_SUCCESS);  // the join: s is in the same capture already
  CHECK_EQ(cuLaunchHostFunc(s, note, &values[4]), CUDA_SUCCESS);
  CHECK_EQ(status_of(s), CU_STREAM_CAPTURE_STATUS_ACTIVE);
  CUgraph fg = reinterpret_cast<CUgraph>(1);
  CHECK_EQ(cuStreamEndCapture(b, &fg), CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);  // only the origin ends it
  CHECK_EQ(status_of(b), CU_STREAM_CAPTURE_STATUS_ACTIVE);
  fg = nullptr;
  CHECK_EQ(cuStreamEndCapture(s, &fg), CUDA_SUCCESS);
  CHECK(fg == graph_s);
  CHECK_EQ(status_of(s), CU_STREAM_CAPTURE_STATUS_NONE);
  CHECK_EQ(status_of(b), CU_STREAM_CAPTURE_STATUS_NONE);
  size_t fn = 0;
  CHECK_EQ(cuGraphGetNodes(fg, nullptr, &fn), CUDA_SUCCESS);
  CHECK_EQ(fn, 6);  // 5 host nodes and the stream write, from both streams
  CUgraphExec fge;
  CHECK_EQ(cuGraphInstantiateWithFlags(&fge, fg, 0), CUDA_SUCCESS);
  CHECK_EQ(cuGraphLaunch(fge, o), CUDA_SUCCESS);  // runs the nodes in the order queued
  CHECK_EQ(g_order.size(), 5);
  for (size_t i = 0; i < g_order.size() && i < 5; ++i) CHECK_EQ(g_order[i], static_cast<int>(i) + 1);
  CHECK_EQ(*crumb, 7u);
  CHECK_EQ(cuStreamSynchronize(o), CUDA_SUCCESS);
  // b left the capture: its work runs again, and waiting on an event of the ended capture is refused.
  CHECK_EQ(cuLaunchHostFunc(b, note, &values[0]), CUDA_SUCCESS);
  CHECK_EQ(g_order.size(), 6);
  CHECK_EQ(cuStreamWaitEvent(b, fork_ev, 0), CUDA_ERROR_INVALID_VALUE);
  CHECK_EQ(status_of(b), CU_STREAM_CAPTURE_STATUS_NONE);
  CHECK_EQ(cuGraphExecDestroy(fge), CUDA_SUCCESS);
  CHECK_EQ(cuGraphDestroy(fg), CUDA_SUCCESS);

  // Synchronizing a joined stream invalidates the whole capture; both streams leave it at its end.
  CHECK_EQ(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  CHECK_EQ(cuEventRecord(fork_ev, s), CUDA_SUCCESS);
  CHECK_EQ(cuStreamWaitEvent(b, fork_ev, 0), CUDA_SUCCESS);
  CHECK_EQ(cuStreamSynchronize(b), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  CHECK_EQ(status_of(s), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  CHECK_EQ(status_of(b), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  CHECK_EQ(cuStreamWaitEvent(o, fork_ev, 0), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  end_invalidated(s);
  CHECK_EQ(status_of(b), CU_STREAM_CAPTURE_STATUS_NONE);

  // A capturing stream waiting on an event recorded outside any capture: 905 (isolation); on an event of
  // another capture: 902 (merge). Both invalidate the waiting stream's capture.
  CHECK_EQ(cuEventRecord(plain_ev, o), CUDA_SUCCESS);
  CHECK_EQ(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  CHECK_EQ(cuStreamWaitEvent(s, plain_ev, CU_EVENT_WAIT_EXTERNAL), CUDA_SUCCESS);  // an external wait node
  CHECK_EQ(status_of(s), CU_STREAM_CAPTURE_STATUS_ACTIVE);
  CHECK_EQ(cuStreamWaitEvent(s, plain_ev, 0), CUDA_ERROR_STREAM_CAPTURE_ISOLATION);
  CHECK_EQ(status_of(s), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  end_invalidated(s);
  CHECK_EQ(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  CHECK_EQ(cuStreamBeginCapture_v2(c, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  CHECK(capture_id_of(s) != capture_id_of(c));
  CHECK_EQ(cuEventRecord(fork_ev, c), CUDA_SUCCESS);
  CHECK_EQ(cuStreamWaitEvent(s, fork_ev, 0), CUDA_ERROR_STREAM_CAPTURE_MERGE);
  CHECK_EQ(status_of(s), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  CHECK_EQ(status_of(c), CU_STREAM_CAPTURE_STATUS_ACTIVE);
  end_invalidated(s);
  CUgraph cgraph = nullptr;
  CHECK_EQ(cuStreamEndCapture(c, &cgraph), CUDA_SUCCESS);
  CHECK_EQ(cuGraphDestroy(cgraph), CUDA_SUCCESS);

  // 6. Captured work is recorded, not run; cuStreamWriteValue64 is captured too; replays run it, and fault
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
  // Outside capture a stream that waits on an event recorded after the fault inherits it: waiting on that
  // stream surfaces it.
  CHECK_EQ(cuEventRecord(plain_ev, s), CUDA_SUCCESS);
  CHECK_EQ(cuStreamWaitEvent(o, plain_ev, 0), CUDA_SUCCESS);
  CHECK_EQ(cuStreamSynchronize(o), CUDA_ERROR_ILLEGAL_ADDRESS);
  CHECK_EQ(cuStreamSynchronize(s), CUDA_ERROR_ILLEGAL_ADDRESS);
  CHECK_EQ(cuStreamWaitEvent(b, plain_ev, 0), CUDA_ERROR_ILLEGAL_ADDRESS);  // the sticky error
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
  CHECK_EQ(m["captures_invalidated"], 7);
  CHECK_EQ(m["synchronizes_during_capture"], 5);
  CHECK_EQ(m["faults_injected"], 1);
  CHECK_EQ(m["faults_surfaced"], 1);
  return simtest::finish();
}
// SPDX-License-Identifier: MIT
