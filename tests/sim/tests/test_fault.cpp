// Tests where and when injected device faults surface through the simulated runtime (CUDA_SIM_FAULT is set by
// ctest to "stencil:2,ns::kern:1:assert,never_launched"). Each scenario runs in a forked child, since a fault
// kills the (simulated) context for the rest of the process, exactly as on the hardware. The child sets
// CUDA_SIM_FAULT_SURFACES (read once, at the driver's first need) before its first CUDA call: the first
// scenarios are about sync mode (a fault in flight on its stream until a wait covers it), the last ones run
// in both modes.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "check.h"
#include "sim_kernels.h"

SIM_KERNEL(stencil, "_Z7stencilPfix");
SIM_KERNEL(other, "_Z5otherv");
SIM_KERNEL(nskern, "_ZN2ns4kernIiEEvPT_");  // void ns::kern<int>(int*)

extern "C" cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t);

namespace {

std::map<std::string, long> read_stats(const std::string& path) {
  std::map<std::string, long> m;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    auto eq = line.find('=');
    if (eq != std::string::npos) m[line.substr(0, eq)] = std::stol(line.substr(eq + 1));
  }
  return m;
}

// The driver's cuStreamWriteValue64, reached the way a preload library would (libcuda is loaded RTLD_GLOBAL).
using WriteValue64 = CUresult (*)(CUstream, CUdeviceptr, cuuint64_t, unsigned);
WriteValue64 write_value64() {
  return reinterpret_cast<WriteValue64>(dlsym(RTLD_DEFAULT, "cuStreamWriteValue64_v2"));
}

// Fault surfaces at the next synchronize of its stream; unrelated streams and events are unaffected; then
// sticky.
void stream_sync_scenario() {
  const char* env = std::getenv("CUDA_SIM_STATS");  // set by ctest
  const std::string stats = env ? env : "";
  CHECK(env != nullptr);
  cudaStream_t s1, s2;
  CHECK_EQ(cudaStreamCreate(&s1), cudaSuccess);
  CHECK_EQ(cudaStreamCreate(&s2), cudaSuccess);
  volatile uint64_t* flag = nullptr;
  CHECK_EQ(
      cudaHostAlloc(const_cast<void**>(reinterpret_cast<volatile void**>(&flag)), 8, cudaHostAllocMapped),
      cudaSuccess);
  void* dflag = nullptr;
  CHECK_EQ(cudaHostGetDevicePointer(&dflag, const_cast<uint64_t*>(flag), 0), cudaSuccess);
  WriteValue64 wv = write_value64();
  CHECK(wv != nullptr);

  CHECK_EQ(sim::launch(stencil, dim3(1), dim3(32), s1), cudaSuccess);  // launch #1: fine
  CHECK_EQ(wv(s1, reinterpret_cast<CUdeviceptr>(dflag), 1, 0), CUDA_SUCCESS);
  CHECK_EQ(*flag, 1u);  // preceding work completed, the marker is visible
  CHECK_EQ(sim::launch(stencil, dim3(1), dim3(32), s1),
           cudaSuccess);  // launch #2: faults, launch still succeeds
  CHECK_EQ(sim::launch(other, dim3(1), dim3(32), s1), cudaSuccess);  // later launches succeed too
  CHECK_EQ(wv(s1, reinterpret_cast<CUdeviceptr>(dflag), 2, 0), CUDA_SUCCESS);
  CHECK_EQ(*flag, 1u);  // the faulted stream never gets there
  cudaEvent_t e2;
  CHECK_EQ(cudaEventCreate(&e2), cudaSuccess);
  CHECK_EQ(cudaEventRecord(e2, s2), cudaSuccess);

  CHECK_EQ(cudaStreamSynchronize(s2), cudaSuccess);  // unrelated stream: the fault is still in flight
  CHECK_EQ(cudaStreamQuery(s2), cudaSuccess);
  CHECK_EQ(cudaEventSynchronize(e2), cudaSuccess);
  CHECK_EQ(cudaGetLastError(), cudaSuccess);

  CHECK_EQ(cudaStreamSynchronize(s1), cudaErrorIllegalAddress);
  CHECK_EQ(cudaGetLastError(), cudaErrorIllegalAddress);
  CHECK_EQ(cudaGetLastError(), cudaErrorIllegalAddress);  // sticky: keeps coming back
  CHECK_EQ(cudaPeekAtLastError(), cudaErrorIllegalAddress);
  CHECK_STR(cudaGetErrorName(cudaErrorIllegalAddress), "cudaErrorIllegalAddress");
  CHECK_STR(cudaGetErrorString(cudaErrorIllegalAddress), "an illegal memory access was encountered");

  // Every later call that touches the device returns it.
  CHECK_EQ(sim::launch(other, dim3(1), dim3(32), s2), cudaErrorIllegalAddress);
  CHECK_EQ(cudaStreamSynchronize(s2), cudaErrorIllegalAddress);
  void* p = nullptr;
  CHECK_EQ(cudaMalloc(&p, 16), cudaErrorIllegalAddress);
  CHECK_EQ(cudaEventQuery(e2), cudaErrorIllegalAddress);
  CHECK_EQ(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
  // Names still work.
  const char* name = nullptr;
  CHECK_EQ(cudaFuncGetName(&name, reinterpret_cast<const void*>(stencil)), cudaSuccess);
  CHECK_STR(name, "_Z7stencilPfix");

  sim::write_stats();
  auto m = read_stats(stats);
  CHECK_EQ(m["launches"], 3);
  CHECK_EQ(m["faults_injected"], 1);
  CHECK_EQ(m["faults_surfaced"], 1);
  CHECK_EQ(m["synchronizes"], 5);  // s2, e2, s1, s2 (sticky), device
  CHECK_EQ(m["synchronizes_during_capture"], 0);
  CHECK_EQ(m["sticky_error"], 700);
}

// An event recorded after the fault reveals it; one recorded before does not.
void event_scenario() {
  cudaStream_t s1;
  CHECK_EQ(cudaStreamCreate(&s1), cudaSuccess);
  cudaEvent_t before, after;
  CHECK_EQ(cudaEventCreate(&before), cudaSuccess);
  CHECK_EQ(cudaEventCreate(&after), cudaSuccess);
  CHECK_EQ(sim::launch(stencil, dim3(1), dim3(1), s1), cudaSuccess);
  CHECK_EQ(cudaEventRecord(before, s1), cudaSuccess);
  CHECK_EQ(sim::launch(stencil, dim3(1), dim3(1), s1), cudaSuccess);  // faults
  CHECK_EQ(cudaEventRecord(after, s1), cudaSuccess);
  CHECK_EQ(cudaEventSynchronize(before), cudaSuccess);
  CHECK_EQ(cudaEventQuery(after), cudaErrorIllegalAddress);
  CHECK_EQ(cudaEventSynchronize(before), cudaErrorIllegalAddress);  // sticky now
}

// Synchronous copies wait for the whole device (legacy default stream semantics).
void memcpy_scenario() {
  cudaStream_t s1;
  CHECK_EQ(cudaStreamCreate(&s1), cudaSuccess);
  int* d = nullptr;
  int h = 5;
  CHECK_EQ(cudaMalloc(reinterpret_cast<void**>(&d), sizeof(int)), cudaSuccess);
  CHECK_EQ(sim::launch(stencil, dim3(1), dim3(1), s1), cudaSuccess);
  CHECK_EQ(sim::launch(stencil, dim3(1), dim3(1), s1), cudaSuccess);  // faults
  CHECK_EQ(cudaMemcpy(&h, &h, sizeof(int), cudaMemcpyHostToDevice),
           cudaErrorInvalidValue);  // bad args: at once
  CHECK_EQ(cudaMemcpy(d, &h, sizeof(int), cudaMemcpyHostToDevice), cudaErrorIllegalAddress);
}

// Assert-type fault matched by the demangled base name without template arguments; surfaces at device sync.
void assert_scenario() {
  CHECK_EQ(sim::launch(nskern, dim3(1), dim3(1)), cudaSuccess);
  CHECK_EQ(cudaDeviceSynchronize(), cudaErrorAssert);
  CHECK_STR(cudaGetErrorName(cudaGetLastError()), "cudaErrorAssert");
  CHECK_STR(cudaGetErrorString(cudaErrorAssert), "device-side assert triggered");
}

// Per-thread default stream: a fault there surfaces at its own synchronize, not at another stream's.
void per_thread_scenario() {
  cudaStream_t s2;
  CHECK_EQ(cudaStreamCreate(&s2), cudaSuccess);
  CHECK_EQ(sim::launch_ptsz(stencil, dim3(1), dim3(1), nullptr), cudaSuccess);
  CHECK_EQ(sim::launch_ptsz(stencil, dim3(1), dim3(1), nullptr),
           cudaSuccess);  // faults on the per-thread stream
  CHECK_EQ(cudaStreamSynchronize(s2), cudaSuccess);
  CHECK_EQ(cudaStreamSynchronize(cudaStreamPerThread), cudaErrorIllegalAddress);
  CHECK_EQ(cudaStreamSynchronize_ptsz(nullptr), cudaErrorIllegalAddress);
}

// --- CUDA_SIM_FAULT_SURFACES: each scenario leaves a fault pending on s1 (stencil launch #2), then makes one
// call. next-call: any call that touches the device returns it, on any stream; sync: only a call that waits
// for s1 (or the whole device) does. Stream writes and event records never surface it.

bool g_next_call = true;  // the mode of this child (set by run_child)

// The driver's entry points, reached the way a preload library would (libcuda is loaded RTLD_GLOBAL).
template <typename F>
F driver(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
}

long faults_surfaced() {
  sim::write_stats();
  const char* stats = std::getenv("CUDA_SIM_STATS");  // set by ctest
  return stats ? read_stats(stats)["faults_surfaced"] : -1;
}

// s1 gets the fault: stencil #1 runs fine, stencil #2 faults; both launches succeed, nothing has surfaced.
void fault_on(cudaStream_t s1) {
  CHECK_EQ(sim::launch(stencil, dim3(1), dim3(32), s1), cudaSuccess);
  CHECK_EQ(sim::launch(stencil, dim3(1), dim3(32), s1), cudaSuccess);  // faults
  CHECK_EQ(faults_surfaced(), 0);
}

std::vector<std::string> g_log;  // driver error-log messages
void collect_log(void*, CUlogLevel, char* msg, size_t) {
  g_log.emplace_back(msg);
}

// next-call: a launch on another stream returns the fault and logs "Sticky error detected"; sync: it runs.
void next_launch_scenario() {
  cudaStream_t s1, s2;
  CHECK_EQ(cudaStreamCreate(&s1), cudaSuccess);
  CHECK_EQ(cudaStreamCreate(&s2), cudaSuccess);
  using RegisterLog = CUresult (*)(CUlogsCallback, void*, CUlogsCallbackHandle*);
  auto register_log = driver<RegisterLog>("cuLogsRegisterCallback");
  CHECK(register_log != nullptr);
  if (register_log) CHECK_EQ(register_log(collect_log, nullptr, nullptr), CUDA_SUCCESS);
  fault_on(s1);          // `other` was never launched: its first launch must still reach the driver
  CHECK(g_log.empty());  // the fault itself logs nothing
  if (g_next_call) {
    CHECK_EQ(sim::launch(other, dim3(1), dim3(32), s2), cudaErrorIllegalAddress);
    CHECK_EQ(g_log.size(), 2u);
    if (g_log.size() == 2) {
      CHECK_STR(g_log[0].c_str(), "Sticky error detected");
      CHECK_STR(g_log[1].c_str(), "Returning 700 (CUDA_ERROR_ILLEGAL_ADDRESS) from cuLaunchKernel");
    }
    CHECK_EQ(faults_surfaced(), 1);
    CHECK_EQ(cudaStreamSynchronize(s2), cudaErrorIllegalAddress);  // sticky
  } else {
    CHECK_EQ(sim::launch(other, dim3(1), dim3(32), s2), cudaSuccess);
    CHECK(g_log.empty());
    CHECK_EQ(cudaStreamSynchronize(s2), cudaSuccess);  // an unrelated stream: still in flight
    CHECK_EQ(faults_surfaced(), 0);
    CHECK_EQ(cudaStreamSynchronize(s1), cudaErrorIllegalAddress);
  }
  CHECK_EQ(faults_surfaced(), 1);
}

// next-call: cuMemAlloc_v2 (cudaMalloc, as in CuPy's memory pool) returns the fault; sync: it allocates.
void next_alloc_scenario() {
  cudaStream_t s1;
  CHECK_EQ(cudaStreamCreate(&s1), cudaSuccess);
  fault_on(s1);
  auto mem_alloc = driver<CUresult (*)(CUdeviceptr*, size_t)>("cuMemAlloc_v2");
  CHECK(mem_alloc != nullptr);
  CUdeviceptr p = 0;
  if (mem_alloc) CHECK_EQ(mem_alloc(&p, 16), g_next_call ? CUDA_ERROR_ILLEGAL_ADDRESS : CUDA_SUCCESS);
  CHECK_EQ(faults_surfaced(), g_next_call ? 1 : 0);
  void* q = nullptr;
  CHECK_EQ(cudaMalloc(&q, 16), g_next_call ? cudaErrorIllegalAddress : cudaSuccess);
  CHECK_EQ(cudaDeviceSynchronize(), cudaErrorIllegalAddress);  // a device-wide wait: both modes
}

// A synchronous copy waits for the whole device: it returns the fault in both modes.
void next_sync_copy_scenario() {
  cudaStream_t s1;
  CHECK_EQ(cudaStreamCreate(&s1), cudaSuccess);
  int* d = nullptr;
  int h = 5;
  CHECK_EQ(cudaMalloc(reinterpret_cast<void**>(&d), sizeof(int)), cudaSuccess);
  fault_on(s1);
  CHECK_EQ(cudaMemcpy(&h, d, sizeof(int), cudaMemcpyDeviceToHost), cudaErrorIllegalAddress);
  CHECK_EQ(faults_surfaced(), 1);
}

// next-call: cuEventQuery of an event recorded BEFORE the fault returns it; sync: that event is complete.
void next_event_query_scenario() {
  cudaStream_t s1;
  CHECK_EQ(cudaStreamCreate(&s1), cudaSuccess);
  cudaEvent_t before;
  CHECK_EQ(cudaEventCreate(&before), cudaSuccess);
  CHECK_EQ(sim::launch(stencil, dim3(1), dim3(32), s1), cudaSuccess);
  CHECK_EQ(cudaEventRecord(before, s1), cudaSuccess);
  CHECK_EQ(sim::launch(stencil, dim3(1), dim3(32), s1), cudaSuccess);  // faults
  CHECK_EQ(faults_surfaced(), 0);
  CHECK_EQ(cudaEventQuery(before), g_next_call ? cudaErrorIllegalAddress : cudaSuccess);
  CHECK_EQ(faults_surfaced(), g_next_call ? 1 : 0);
}

// Neither mode surfaces a fault at cuStreamWriteValue64 (queued behind it: never writes) or cuEventRecord
// (the event carries the fault), on the faulting stream or another; a wait on that event then surfaces it.
void not_at_write_or_record_scenario() {
  cudaStream_t s1, s2;
  CHECK_EQ(cudaStreamCreate(&s1), cudaSuccess);
  CHECK_EQ(cudaStreamCreate(&s2), cudaSuccess);
  volatile uint64_t* flag = nullptr;
  CHECK_EQ(
      cudaHostAlloc(const_cast<void**>(reinterpret_cast<volatile void**>(&flag)), 8, cudaHostAllocMapped),
      cudaSuccess);
  void* dflag = nullptr;
  CHECK_EQ(cudaHostGetDevicePointer(&dflag, const_cast<uint64_t*>(flag), 0), cudaSuccess);
  cudaEvent_t after, other_stream;
  CHECK_EQ(cudaEventCreate(&after), cudaSuccess);
  CHECK_EQ(cudaEventCreate(&other_stream), cudaSuccess);
  WriteValue64 wv = write_value64();
  CHECK(wv != nullptr);
  fault_on(s1);
  if (wv) {
    CHECK_EQ(wv(s1, reinterpret_cast<CUdeviceptr>(dflag), 7, 0), CUDA_SUCCESS);
    CHECK_EQ(wv(s2, reinterpret_cast<CUdeviceptr>(dflag), 8, 0), CUDA_SUCCESS);
  }
  CHECK_EQ(cudaEventRecord(after, s1), cudaSuccess);
  CHECK_EQ(cudaEventRecord(other_stream, s2), cudaSuccess);
  cudaStreamCaptureStatus status;
  CHECK_EQ(cudaStreamIsCapturing(s1, &status), cudaSuccess);
  const char* name = nullptr;
  CHECK_EQ(cudaFuncGetName(&name, reinterpret_cast<const void*>(stencil)), cudaSuccess);
  CHECK_EQ(faults_surfaced(), 0);
  CHECK_EQ(*flag, 8u);  // the write behind the fault never lands; the one on s2 does
  CHECK_EQ(cudaEventQuery(after), cudaErrorIllegalAddress);
  CHECK_EQ(faults_surfaced(), 1);
}

int run_child(void (*scenario)(), const char* label, const char* surfaces) {
  return simtest::run_in_child(scenario, std::string(label) + ", " + surfaces, [&] {
    setenv("CUDA_SIM_FAULT_SURFACES", surfaces, 1);
    g_next_call = std::strcmp(surfaces, "next-call") == 0;
  });
}

}  // namespace

int main() {
  int failed = 0;
  failed += run_child(stream_sync_scenario, "stream sync", "sync");
  failed += run_child(event_scenario, "event", "sync");
  failed += run_child(memcpy_scenario, "memcpy", "sync");
  failed += run_child(per_thread_scenario, "per-thread stream", "sync");
  for (const char* surfaces : {"next-call", "sync"}) {
    failed += run_child(assert_scenario, "assert", surfaces);
    failed += run_child(next_launch_scenario, "launch on another stream", surfaces);
    failed += run_child(next_alloc_scenario, "alloc", surfaces);
    failed += run_child(next_sync_copy_scenario, "synchronous copy", surfaces);
    failed += run_child(next_event_query_scenario, "event query", surfaces);
    failed += run_child(not_at_write_or_record_scenario, "stream write, event record", surfaces);
  }
  std::printf("%s\n", failed ? "FAILED" : "all scenarios passed");
  return failed ? 1 : 0;
}
// SPDX-License-Identifier: MIT
