// CUDA graphs as the engine knows them: executable graphs (GraphInfo, one per exec, never freed), the stream
// captures in progress and those that made a graph, and graphs built node by node. A fault in one of a
// graph's replays is then told with where its kernels were captured, and, with graph breadcrumbs, which node
// failed. Not on the launch path, except for launches into a capture (rare).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "pieces/breadcrumb_slots.h"
#include "util/handle_table.h"
#include "records.h"

namespace blockrun {

// What the graph breadcrumbs say of a graph launch that failed: the captured launches that did not complete
// and whose branch got that far (indexes into CaptureRecord::launches, in capture order). `known` is false
// where they cannot tell (no breadcrumbs, not the graph's latest replay, records dropped).
struct NodeView {
  bool known = false;
  std::vector<size_t> unfinished;
};

// Where a launch into a capture went in its graph: the slot its breadcrumb node writes and the value (its
// capture position); -1: no breadcrumb node.
struct CapturePlace {
  int32_t graph_slot = -1;
  uint32_t position = 0;
};

class GraphCaptures {
 public:
  GraphCaptures();

  // The executable graph `exec`, as instantiated (note_graph) or first launched.
  const GraphInfo* graph(const void* exec);
  // At instantiation: `exec` made from `graph` (a CUgraph; its capture, if one was seen, is linked).
  const GraphInfo* note_graph(const void* exec, uint64_t nodes, const void* graph);

  // A stream capture `id` began (`record`: where; its launches follow), and ended making `graph` (nullptr:
  // it failed, and its launches are not kept).
  void begin(uint64_t id, std::unique_ptr<CaptureRecord> record);
  void end(uint64_t id, const void* graph);
  // A launch recorded into the open capture `id`, kept in order unless the process's bound is reached. With
  // `slots` (graph breadcrumbs), its branch (the capturing stream) gets a slot of its own on first use.
  CapturePlace keep_launch(uint64_t id, const CapturedLaunch& launch, BreadcrumbSlots* slots);
  // A graph built node by node (`graph`, a CUgraph) got a kernel node: kept like a captured launch.
  void keep_kernel_node(const void* graph, const CapturedLaunch& launch);

  // The branches of a graph launch's capture whose slots a replay first resets (nullptr: none).
  static const std::vector<GraphBranch>* branches(const LaunchRecord& record);
  // What the graph breadcrumbs in `slots` say of the replay `record` (the one that ran last).
  static NodeView nodes(const LaunchRecord& record, const volatile uint64_t* slots);

  template <typename Visit>
  void for_each_graph(Visit&& visit) const {
    graphs_.for_each(visit);
  }

 private:
  // Keeps `launch` in `record` unless the process's bound is reached (then counts it). With mutex_ held.
  bool keep_within_bound(CaptureRecord& record, const CapturedLaunch& launch);  // false: dropped

  HandleTable<GraphInfo> graphs_;
  GraphInfo overflow_graph_;
  std::mutex mutex_;
  std::map<uint64_t, std::unique_ptr<CaptureRecord>> open_;  // captures in progress, by id
  std::map<const void*, const CaptureRecord*> made_;         // CUgraph -> the capture that made it
  std::vector<std::unique_ptr<CaptureRecord>> kept_;         // for the process's life: graphs replay
  uint64_t launches_kept_ = 0;
};

}  // namespace blockrun
// SPDX-License-Identifier: MIT
