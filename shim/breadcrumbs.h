// Device-side breadcrumbs (CUDA_BLOCKRUN_BREADCRUMBS, docs/localize.md): after each launch the GPU writes the
// launch's number into its stream's slot of pinned, host-mapped memory, by a stream memory operation enqueued
// on the same stream, so that when an asynchronous error surfaces the engine can tell how far each stream
// got (Engine::set_breadcrumbs).
#pragma once

#include "engine.h"
#include "launch_path.h"
#include "shim.h"

namespace blockrun::shim {

// On the launch path, before a launch is recorded: sets the slots up once per process (at the first launch,
// when a context is current), or reports once why it cannot. Does nothing without the option (inline: a
// launch without breadcrumbs pays one test).
void set_up_breadcrumbs(Engine& engine);
inline void prepare_breadcrumbs(Engine& engine) {
  if (engine.launch_path().wants_breadcrumbs()) set_up_breadcrumbs(engine);
}

// After a launch that succeeded: enqueues its breadcrumb on its stream (stream 0 with per_thread: the
// thread's per-thread default stream). A launch into a capture gets, with graph breadcrumbs, a breadcrumb
// node in the graph (the write is captured: it writes the launch's capture position at each replay), else
// none. True where a write was enqueued.
bool drop_breadcrumb(LaunchPath& path, const Launch& launch, const void* stream, bool per_thread);

// Before a graph launch: resets the slots of its graph's breadcrumb nodes on the launch's stream, so that
// after a faulting replay they tell how far this replay got (GraphCaptures::nodes).
void reset_graph_breadcrumbs(LaunchPath& path, const Launch& launch, const void* stream, bool per_thread);

}  // namespace blockrun::shim
// SPDX-License-Identifier: MIT
