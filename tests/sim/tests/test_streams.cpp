// Tests the simulated runtime with several streams, as tests/programs/concurrent_app and the GPU case
// tests/gpu/streams_events.cu use them (ctest sets CUDA_SIM_FAULT=produce:2 and
// CUDA_SIM_FAULT_SURFACES=sync): non-blocking streams, a producer's fault carried to a consumer stream by
// cudaEventRecord + cudaStreamWaitEvent, host functions queued behind a fault, CUDA_SIM_FAULT_STOPS_DEVICE
// with the per-thread default streams of several threads, and a consumer kernel still running when the
// producer faults (CUDA_SIM_KERNEL_LAG). Each scenario runs in a forked child, since a fault kills the
// (simulated) context for the rest of the process; the child sets the variables of its mode (read once)
// before its first CUDA call.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "check.h"
#include "sim_kernels.h"

SIM_KERNEL(produce, "_Z7producePfi");
SIM_KERNEL(consume, "_Z7consumePfPKfi");
SIM_KERNEL(fill, "_Z4fillPfif");

namespace {

long stat(const char* key) {
  sim::write_stats();
  return simtest::stat_in_file(key);
}

// The driver's entry points, reached the way a preload library would (libcuda is loaded RTLD_GLOBAL).
template <typename F>
F driver(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
}
using WriteValue64 = CUresult (*)(CUstream, CUdeviceptr, cuuint64_t, unsigned);
using GetFlags = CUresult (*)(CUstream, unsigned*);

// A mapped host word that stream writes (breadcrumbs) land in: the host sees whether the work before a write
// completed.
struct Flag {
  volatile uint64_t* host = nullptr;
  CUdeviceptr device = 0;
  Flag() {
    CHECK_EQ(
        cudaHostAlloc(const_cast<void**>(reinterpret_cast<volatile void**>(&host)), 8, cudaHostAllocMapped),
        cudaSuccess);
    void* d = nullptr;
    CHECK_EQ(cudaHostGetDevicePointer(&d, const_cast<uint64_t*>(host), 0), cudaSuccess);
    device = reinterpret_cast<CUdeviceptr>(d);
  }
  // Queues a write of `value` on `stream` (CU_STREAM_PER_THREAD: the calling thread's default stream).
  void write(CUstream stream, uint64_t value) {
    auto wv = driver<WriteValue64>("cuStreamWriteValue64_v2");
    CHECK(wv != nullptr);
    if (wv) CHECK_EQ(wv(stream, device, value, 0), CUDA_SUCCESS);
  }
};

void count_call(void* counter) {
  ++*static_cast<int*>(counter);
}

// cudaStreamCreateWithFlags(cudaStreamNonBlocking): the flag is kept (the driver's cuStreamGetFlags, on the
// same handle), an unknown flag is refused, and a fault on the stream surfaces at its own synchronize, not
// at another stream's.
void non_blocking_scenario() {
  cudaStream_t nb = nullptr, blocking = nullptr, bad = nullptr;
  CHECK_EQ(cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking), cudaSuccess);
  CHECK_EQ(cudaStreamCreate(&blocking), cudaSuccess);
  CHECK_EQ(cudaStreamCreateWithFlags(&bad, 4), cudaErrorInvalidValue);
  auto get_flags = driver<GetFlags>("cuStreamGetFlags");
  CHECK(get_flags != nullptr);
  unsigned flags = 99;
  if (get_flags) {
    CHECK_EQ(get_flags(reinterpret_cast<CUstream>(nb), &flags), CUDA_SUCCESS);
    CHECK_EQ(flags, CU_STREAM_NON_BLOCKING);
    CHECK_EQ(get_flags(reinterpret_cast<CUstream>(blocking), &flags), CUDA_SUCCESS);
    CHECK_EQ(flags, 0u);
  }
  CHECK_EQ(sim::launch(produce, dim3(1), dim3(32), nb), cudaSuccess);
  CHECK_EQ(sim::launch(produce, dim3(1), dim3(32), nb), cudaSuccess);  // faults
  CHECK_EQ(sim::launch(fill, dim3(1), dim3(32), blocking), cudaSuccess);
  CHECK_EQ(cudaStreamSynchronize(blocking), cudaSuccess);
  CHECK_EQ(stat("faults_surfaced"), 0);
  CHECK_EQ(cudaStreamSynchronize(nb), cudaErrorIllegalAddress);
}

// Producer P and consumer C (non-blocking), joined each round by an event recorded on P and waited for on C,
// as concurrent_app's `streams` mode. The producer's 2nd launch faults: the event recorded after it carries
// the fault, C inherits it by waiting, so C's later work never runs (its host function is not called, its
// stream write never lands) and C's synchronize surfaces the fault, before anything waited for P. A stream
// that waited on the event recorded before the fault is unaffected.
void event_carries_fault_scenario() {
  cudaStream_t p = nullptr, c = nullptr, early = nullptr, unrelated = nullptr;
  CHECK_EQ(cudaStreamCreateWithFlags(&p, cudaStreamNonBlocking), cudaSuccess);
  CHECK_EQ(cudaStreamCreateWithFlags(&c, cudaStreamNonBlocking), cudaSuccess);
  CHECK_EQ(cudaStreamCreateWithFlags(&early, cudaStreamNonBlocking), cudaSuccess);
  CHECK_EQ(cudaStreamCreate(&unrelated), cudaSuccess);
  cudaEvent_t ready = nullptr, before = nullptr;
  CHECK_EQ(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming), cudaSuccess);
  CHECK_EQ(cudaEventCreateWithFlags(&before, cudaEventDisableTiming), cudaSuccess);
  Flag flag;
  int consumed = 0, produced = 0;
  for (int round = 1; round <= 3; ++round) {
    CHECK_EQ(sim::launch(produce, dim3(1), dim3(32), p), cudaSuccess);  // round 2: faults
    CHECK_EQ(cudaLaunchHostFunc(p, count_call, &produced), cudaSuccess);
    CHECK_EQ(cudaEventRecord(ready, p), cudaSuccess);
    if (round == 1) CHECK_EQ(cudaEventRecord(before, p), cudaSuccess);
    CHECK_EQ(cudaStreamWaitEvent(c, ready, 0), cudaSuccess);
    CHECK_EQ(sim::launch(consume, dim3(1), dim3(32), c), cudaSuccess);
    flag.write(reinterpret_cast<CUstream>(c), static_cast<uint64_t>(round));
    CHECK_EQ(cudaLaunchHostFunc(c, count_call, &consumed), cudaSuccess);
  }
  CHECK_EQ(produced, 1);  // behind the fault on P
  CHECK_EQ(consumed, 1);  // behind the fault C inherited
  CHECK_EQ(*flag.host, 1u);
  CHECK_EQ(stat("faults_injected"), 1);
  CHECK_EQ(stat("faults_surfaced"), 0);  // sync mode: still in flight

  CHECK_EQ(cudaStreamWaitEvent(early, before, 0), cudaSuccess);
  CHECK_EQ(sim::launch(fill, dim3(1), dim3(32), early), cudaSuccess);
  CHECK_EQ(cudaStreamSynchronize(early), cudaSuccess);      // waited on work before the fault only
  CHECK_EQ(cudaStreamSynchronize(unrelated), cudaSuccess);  // a stream that never waited on P
  CHECK_EQ(stat("faults_surfaced"), 0);

  CHECK_EQ(cudaStreamSynchronize(c), cudaErrorIllegalAddress);  // the consumer's synchronize, first
  CHECK_EQ(stat("faults_surfaced"), 1);
  CHECK_EQ(cudaStreamSynchronize(p), cudaErrorIllegalAddress);  // sticky
  CHECK_EQ(cudaLaunchHostFunc(c, count_call, &consumed), cudaErrorIllegalAddress);
  CHECK_EQ(consumed, 1);
}

// Lets threads take their steps in a fixed order.
class Steps {
 public:
  void at(int step) {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait(lock, [&] { return step_ == step; });
  }
  void next() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++step_;
    }
    changed_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  int step_ = 0;
};

bool g_stops_device = false;  // the mode of this child (set by run_child)

// Three threads on their per-thread default streams. `producer` faults (produce#2); `busy` has work queued
// before and after it; `idle` only before. With CUDA_SIM_FAULT_STOPS_DEVICE=1 nothing queued after the fault
// runs on any stream: busy's write never lands, its host function is not called, and its own synchronize
// surfaces the fault (its work would complete only when the fault kills the context), while idle's
// synchronize, before that, succeeds. Without it busy's work runs and only the producer's stream faults.
void stops_device_per_thread_scenario() {
  Steps steps;
  Flag flag;
  int busy_calls = 0;
  cudaEvent_t after = nullptr;
  CHECK_EQ(cudaEventCreateWithFlags(&after, cudaEventDisableTiming), cudaSuccess);
  std::thread busy([&] {
    steps.at(0);
    CHECK_EQ(sim::launch_ptsz(fill, dim3(1), dim3(32)), cudaSuccess);
    flag.write(CU_STREAM_PER_THREAD, 1);
    CHECK_EQ(*flag.host, 1u);
    steps.next();
    steps.at(3);
    CHECK_EQ(sim::launch_ptsz(fill, dim3(1), dim3(32)), cudaSuccess);  // after the fault
    flag.write(CU_STREAM_PER_THREAD, 2);
    CHECK_EQ(cudaLaunchHostFunc(cudaStreamPerThread, count_call, &busy_calls), cudaSuccess);
    CHECK_EQ(cudaEventRecord(after, cudaStreamPerThread), cudaSuccess);
    CHECK_EQ(*flag.host, g_stops_device ? 1u : 2u);
    CHECK_EQ(busy_calls, g_stops_device ? 0 : 1);
    steps.next();
    steps.at(5);
    CHECK_EQ(cudaStreamSynchronize(cudaStreamPerThread),
             g_stops_device ? cudaErrorIllegalAddress : cudaSuccess);
    CHECK_EQ(stat("faults_surfaced"), g_stops_device ? 1 : 0);
    steps.next();
  });
  std::thread idle([&] {
    steps.at(1);
    CHECK_EQ(sim::launch_ptsz(fill, dim3(1), dim3(32)), cudaSuccess);
    steps.next();
    steps.at(4);
    CHECK_EQ(cudaStreamSynchronize(cudaStreamPerThread), cudaSuccess);  // its work completed before the fault
    CHECK_EQ(stat("faults_surfaced"), 0);
    steps.next();
  });
  std::thread producer([&] {
    steps.at(2);
    CHECK_EQ(sim::launch_ptsz(produce, dim3(1), dim3(32)), cudaSuccess);
    CHECK_EQ(sim::launch_ptsz(produce, dim3(1), dim3(32)), cudaSuccess);  // faults
    CHECK_EQ(stat("faults_injected"), 1);
    steps.next();
    steps.at(6);
    CHECK_EQ(cudaStreamSynchronize(cudaStreamPerThread),
             cudaErrorIllegalAddress);  // its own fault, or sticky
    steps.next();
  });
  busy.join();
  idle.join();
  producer.join();
  CHECK_EQ(cudaEventQuery(after), cudaErrorIllegalAddress);  // sticky by now, either way
  CHECK_EQ(stat("faults_surfaced"), 1);
}

// CUDA_SIM_KERNEL_LAG=consume=1 (set by run_child): each consume launch is still running until one more
// launch is made. The work queued behind it on its stream (a stream write, a host function) waits for it; a
// wait on its stream, a wait on an event recorded behind it, a launch on its stream or the next launch
// anywhere completes it. With CUDA_SIM_FAULT_STOPS_DEVICE the producer's fault (produce#2) kills it while it
// runs: it never completes, although it was launched before the faulting kernel, its stream takes the fault,
// its held work never runs and the event recorded behind it carries the fault. Without, it completes at that
// launch as at any other.
void lag_scenario() {
  cudaStream_t p = nullptr, c = nullptr;
  CHECK_EQ(cudaStreamCreateWithFlags(&p, cudaStreamNonBlocking), cudaSuccess);
  CHECK_EQ(cudaStreamCreateWithFlags(&c, cudaStreamNonBlocking), cudaSuccess);
  cudaEvent_t behind = nullptr;
  CHECK_EQ(cudaEventCreateWithFlags(&behind, cudaEventDisableTiming), cudaSuccess);
  Flag flag;
  const CUstream cs = reinterpret_cast<CUstream>(c);
  int calls = 0;

  CHECK_EQ(sim::launch(consume, dim3(1), dim3(32), c), cudaSuccess);  // still running
  flag.write(cs, 1);
  CHECK_EQ(cudaLaunchHostFunc(c, count_call, &calls), cudaSuccess);
  CHECK_EQ(*flag.host, 0u);
  CHECK_EQ(calls, 0);
  CHECK_EQ(cudaStreamSynchronize(c), cudaSuccess);  // the wait lets it complete
  CHECK_EQ(*flag.host, 1u);
  CHECK_EQ(calls, 1);

  CHECK_EQ(sim::launch(consume, dim3(1), dim3(32), c), cudaSuccess);
  flag.write(cs, 2);
  CHECK_EQ(cudaEventRecord(behind, c), cudaSuccess);
  CHECK_EQ(*flag.host, 1u);
  CHECK_EQ(cudaEventQuery(behind), cudaSuccess);  // a wait on an event behind it completes it
  CHECK_EQ(*flag.host, 2u);

  CHECK_EQ(sim::launch(consume, dim3(1), dim3(32), c), cudaSuccess);
  flag.write(cs, 3);
  CHECK_EQ(sim::launch(consume, dim3(1), dim3(32), c), cudaSuccess);  // same stream: the first completes
  CHECK_EQ(*flag.host, 3u);
  flag.write(cs, 4);
  CHECK_EQ(sim::launch(produce, dim3(1), dim3(32), p), cudaSuccess);  // produce#1: its lag ends
  CHECK_EQ(*flag.host, 4u);

  CHECK_EQ(sim::launch(consume, dim3(1), dim3(32), c), cudaSuccess);  // launched before the fault
  flag.write(cs, 5);
  CHECK_EQ(cudaLaunchHostFunc(c, count_call, &calls), cudaSuccess);
  CHECK_EQ(cudaEventRecord(behind, c), cudaSuccess);
  CHECK_EQ(sim::launch(produce, dim3(1), dim3(32), p), cudaSuccess);  // produce#2 faults
  CHECK_EQ(stat("faults_injected"), 1);
  CHECK_EQ(*flag.host, g_stops_device ? 4u : 5u);
  CHECK_EQ(calls, g_stops_device ? 1 : 2);
  CHECK_EQ(stat("faults_surfaced"), 0);  // sync mode: in flight
  if (g_stops_device) {
    CHECK_EQ(cudaEventQuery(behind), cudaErrorIllegalAddress);
    CHECK_EQ(cudaStreamSynchronize(p), cudaErrorIllegalAddress);  // sticky
  } else {
    CHECK_EQ(cudaEventQuery(behind), cudaSuccess);
    CHECK_EQ(cudaStreamSynchronize(c), cudaSuccess);
    CHECK_EQ(cudaStreamSynchronize(p), cudaErrorIllegalAddress);
  }
  CHECK_EQ(stat("faults_surfaced"), 1);
}

int run_child(void (*scenario)(), const char* label, bool stops_device, const char* lag = nullptr) {
  std::string described = std::string(label) + (stops_device ? ", stops device" : "") + (lag ? ", lag" : "");
  return simtest::run_in_child(scenario, described, [&] {
    simtest::set_or_unset("CUDA_SIM_FAULT_STOPS_DEVICE", stops_device ? "1" : nullptr);
    simtest::set_or_unset("CUDA_SIM_KERNEL_LAG", lag);
    g_stops_device = stops_device;
  });
}

}  // namespace

int main() {
  int failed = 0;
  failed += run_child(non_blocking_scenario, "non-blocking streams", false);
  failed += run_child(event_carries_fault_scenario, "event carries the fault", false);
  failed += run_child(stops_device_per_thread_scenario, "per-thread streams", false);
  failed += run_child(stops_device_per_thread_scenario, "per-thread streams", true);
  failed += run_child(lag_scenario, "consumer still running", false, "consume=1");
  failed += run_child(lag_scenario, "consumer still running", true, "consume=1");
  std::printf("%s\n", failed ? "FAILED" : "all scenarios passed");
  return failed ? 1 : 0;
}
// SPDX-License-Identifier: MIT
