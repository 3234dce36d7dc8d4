// The gate for launches blocked alone (launch_gate.h).
#include "launch_gate.h"

#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <atomic>

#include "blocking.h"
#include "engine.h"

namespace blockrun::shim {

namespace {

pthread_mutex_t g_gate = PTHREAD_MUTEX_INITIALIZER;
// Launches in their launch call without the gate (NCCL's, or one that waited too long).
std::atomic<int> g_ungated_in_launch{0};
thread_local int t_held = 0;        // how deeply the calling thread holds the gate (0: not)
thread_local bool t_alone = false;  // it holds it for a launch blocked alone, until release_alone

// How long a launch waits at the gate before it goes on ungated. Long: an alone launch holds the gate for its
// kernel's whole run. Only to break a cycle through the program's own locks (launch_gate.h).
constexpr time_t kLongestWaitSeconds = 10;
// How long a launch blocked alone waits for ungated launches still in their launch call before it waits on
// the device anyway, then without taking that wait as proof of anything.
constexpr uint64_t kUngatedWaitNs = 100'000'000;

}  // namespace

void enable_launch_gate() {
  g_launch_gate_enabled = true;
}

GatePass enter_gate(bool may_wait) {
  if (!launch_gate_enabled()) return GatePass::Off;
  if (t_held > 0) {
    ++t_held;
    return GatePass::Nested;
  }
  if (may_wait) {
    timespec deadline{};
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += kLongestWaitSeconds;
    if (pthread_mutex_timedlock(&g_gate, &deadline) == 0) {
      t_held = 1;
      return GatePass::Held;
    }
  }
  g_ungated_in_launch.fetch_add(1);
  return GatePass::Ungated;
}

void leave_gate(GatePass pass) {
  switch (pass) {
    case GatePass::Off:
      return;
    case GatePass::Nested:
      --t_held;
      return;
    case GatePass::Ungated:
      g_ungated_in_launch.fetch_sub(1);
      return;
    case GatePass::Held:
      if (t_alone) return;  // kept until its synchronize returned: release_alone
      t_held = 0;
      pthread_mutex_unlock(&g_gate);
      return;
  }
}

bool become_alone(Engine& engine, GatePass pass, uint64_t sequence) {
  if (pass != GatePass::Held) return false;
  t_alone = true;
  // Every launch numbered before this one holds, or held, the gate from before its number to the end of its
  // launch call, so it is enqueued; the ungated ones may still be in theirs.
  bool ungated_enqueued = true;
  for (uint64_t deadline = 0; g_ungated_in_launch.load() != 0;) {
    uint64_t now = steady_now_ns();
    if (deadline == 0) deadline = now + kUngatedWaitNs;
    if (now > deadline) {
      ungated_enqueued = false;
      break;
    }
    sched_yield();
  }
  auto synchronize = real<Hook::cuCtxSynchronize>();
  auto exchange_mode = helper<Helper::cuThreadExchangeStreamCaptureMode>();
  if (!synchronize) return true;  // no proof: the verdict keeps what it cannot rule out
  // Relaxed: a capture running in another thread is not invalidated by this wait.
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  if (exchange_mode) exchange_mode(&mode);
  CallSpan span;
  span.began_ns = engine.call_clock();
  CUresult result = synchronize();
  span.returned_ns = engine.call_clock();
  if (exchange_mode) exchange_mode(&mode);
  // Launches numbered from here on are the alone one and ungated ones: none is proved by this wait. A mark
  // of 1 proves nothing but still reports an error the wait returned.
  engine.end_sync("cuCtxSynchronize (the wait before a launch blocked alone)", true, nullptr, false,
                  ungated_enqueued ? sequence : 1, ErrorCode{Layer::Driver, static_cast<int>(result)}, span);
  return true;
}

void release_alone() {
  if (!t_alone) return;
  t_alone = false;
  t_held = 0;
  pthread_mutex_unlock(&g_gate);
}

void reset_launch_gate_after_fork() {
  g_gate = PTHREAD_MUTEX_INITIALIZER;
  g_ungated_in_launch.store(0);
  // The forking thread's own holding ends with the launch it was in: fork() inside a launch call is not a
  // thing programs do, and a child starts without the parent's launches.
  t_held = 0;
  t_alone = false;
}

}  // namespace blockrun::shim
// SPDX-License-Identifier: MIT
