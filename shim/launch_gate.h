// The gate for launches the policy blocks alone (`block-alone`, docs/policy.md): such a launch first waits
// until everything launched before it has completed (a wait on the whole device), then runs while every
// other thread's launch waits here, before it is numbered, until the launch's own synchronize returns. An
// error at that synchronize is then its own, whatever else the program had queued, on any stream.
//
// Only where the policy has a block-alone rule (enable_launch_gate): then every launch passes the gate (a
// mutex held from before its number is taken until its launch call returns; a launch blocked alone holds it
// until its synchronize returned). It never deadlocks the program: NCCL kernels never wait (blocking a
// collective's launch can hang a job), launches into a stream capture do not run and never hold it long,
// and a launch that waited kLongestWait gives up and goes on ungated (say, a host callback the wait before
// the alone launch waits for needs a lock the waiting thread holds): a launch numbered after the alone one
// and not known complete keeps the alone one's verdict from being exact, as it must.
#pragma once

#include <cstdint>

#include "shim.h"

namespace blockrun::shim {

// At start, where the policy blocks some launch alone.
void enable_launch_gate();
inline bool g_launch_gate_enabled = false;  // set before the first launch, read by every launch
inline bool launch_gate_enabled() {
  return g_launch_gate_enabled;
}

// How a launch passed the gate.
enum class GatePass : uint8_t {
  Off,      // the gate is not in use
  Held,     // it holds the gate
  Nested,   // the calling thread held it already (a launch inside a launch call)
  Ungated,  // it did not wait (NCCL's), or waited too long: counted until leave_gate
};
// Passes the gate before a launch is numbered; `may_wait` false for a launch that must never wait (NCCL's):
// it goes through at once, counted, and a launch blocked alone waits for it to be enqueued before it
// trusts its wait on the device. Pair with leave_gate after the launch call (unless the launch is blocked
// alone: then become_alone, and release_alone after its synchronize).
GatePass enter_gate(bool may_wait);
void leave_gate(GatePass pass);

// The launch that entered the gate is blocked alone: it keeps the gate and waits, on the whole device, for
// everything numbered before it (`sequence`). Tells the engine what that wait proved (every launch numbered
// before it completed) or the error it returned.
// Returns whether it did (only a launch that holds the gate can).
bool become_alone(Engine& engine, GatePass pass, uint64_t sequence);
// After the alone launch's synchronize (or where it ended without one): the gate opens. Nothing where the
// calling thread holds no alone launch.
void release_alone();

// In a forked child: the gate is open (the threads that held it are not in the child).
void reset_launch_gate_after_fork();

}  // namespace blockrun::shim
// SPDX-License-Identifier: MIT
