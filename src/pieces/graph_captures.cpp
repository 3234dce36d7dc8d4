// CUDA graphs, their captures and what their breadcrumbs say (graph_captures.h).
#include "pieces/graph_captures.h"

#include <algorithm>

namespace blockrun {

namespace {

constexpr size_t kGraphCapacity = 1 << 12;
constexpr uint64_t kMaxCapturedLaunches = 1 << 20;  // launch records kept for graphs' replays (56 MiB)

uint64_t graph_key(const void* exec) {
  return reinterpret_cast<uint64_t>(exec) + 1;  // 0: empty
}

const CaptureRecord* capture_of(const LaunchRecord& record) {
  return record.graph ? record.graph->capture.load(std::memory_order_acquire) : nullptr;
}

// The branch of `capture` for `stream`, given a slot on first use; nullptr past CapturedLaunch::kNoBranch.
const GraphBranch* branch_for(CaptureRecord& capture, const StreamId& stream, BreadcrumbSlots& slots) {
  auto branch = std::find_if(capture.branches.begin(), capture.branches.end(),
                             [&](const GraphBranch& known) { return known.stream == stream; });
  if (branch != capture.branches.end()) return &*branch;
  if (capture.branches.size() >= CapturedLaunch::kNoBranch) return nullptr;
  int32_t slot = slots.new_slot();
  // Until a replay's reset writes 0, the slot says no replay began.
  if (slot >= 0) slots.mark_not_started(slot);
  capture.branches.push_back(GraphBranch{stream, slot});
  return &capture.branches.back();
}

}  // namespace

GraphCaptures::GraphCaptures() : graphs_(kGraphCapacity) {}

const GraphInfo* GraphCaptures::graph(const void* exec) {
  if (GraphInfo* known = graphs_.find(graph_key(exec))) return known;
  return note_graph(exec, 0, nullptr);
}

const GraphInfo* GraphCaptures::note_graph(const void* exec, uint64_t nodes, const void* graph) {
  GraphInfo* info = graphs_.find_or_insert(graph_key(exec), [&] {
    auto* created = new GraphInfo;
    created->exec = exec;
    return created;
  });
  if (!info) return &overflow_graph_;
  // An executable graph's address can be reused after it is destroyed: the latest count and capture win.
  const CaptureRecord* capture = nullptr;
  if (graph) {
    std::lock_guard<std::mutex> guard(mutex_);
    auto made = made_.find(graph);
    if (made != made_.end()) {
      capture = made->second;
      const_cast<CaptureRecord*>(capture)->linked = true;
    }
  }
  // The nodes the program made: without the breadcrumb nodes the shim added.
  if (nodes && capture) nodes -= std::min(nodes, capture->breadcrumb_nodes);
  if (nodes) info->nodes = nodes;
  if (graph) info->capture.store(capture, std::memory_order_release);
  return info;
}

void GraphCaptures::begin(uint64_t id, std::unique_ptr<CaptureRecord> record) {
  std::lock_guard<std::mutex> guard(mutex_);
  open_[id] = std::move(record);
}

void GraphCaptures::end(uint64_t id, const void* graph) {
  std::lock_guard<std::mutex> guard(mutex_);
  auto open = open_.find(id);
  if (open == open_.end()) return;
  std::unique_ptr<CaptureRecord> record = std::move(open->second);
  open_.erase(open);
  if (!graph) {  // an invalidated capture makes no graph: its launches are not kept
    launches_kept_ -= record->launches.size();
    return;
  }
  made_[graph] = record.get();
  kept_.push_back(std::move(record));
}

CapturePlace GraphCaptures::keep_launch(uint64_t id, const CapturedLaunch& launch, BreadcrumbSlots* slots) {
  CapturePlace place;
  CapturedLaunch kept = launch;
  std::lock_guard<std::mutex> guard(mutex_);
  auto open = open_.find(id);
  if (open == open_.end()) return place;  // began before the shim was active
  CaptureRecord& capture = *open->second;
  if (slots && capture.launches_dropped == 0) {
    // Its branch: the capturing stream it went into (a slot of its own for each).
    if (const GraphBranch* branch = branch_for(capture, kept.stream, *slots))
      kept.branch = static_cast<uint16_t>(branch - capture.branches.data());
  }
  if (!keep_within_bound(capture, kept) || kept.branch == CapturedLaunch::kNoBranch) return place;
  place.graph_slot = capture.branches[kept.branch].slot;
  place.position = static_cast<uint32_t>(capture.launches.size());
  if (place.graph_slot >= 0) ++capture.breadcrumb_nodes;
  return place;
}

void GraphCaptures::keep_kernel_node(const void* graph, const CapturedLaunch& launch) {
  std::lock_guard<std::mutex> guard(mutex_);
  auto made = made_.find(graph);
  const CaptureRecord* before = made == made_.end() ? nullptr : made->second;
  CaptureRecord* record = const_cast<CaptureRecord*>(before);
  if (!record || record->linked) {
    // A new graph, or one an executable graph was made from (which keeps what it was made of): a record of
    // its own.
    kept_.push_back(std::make_unique<CaptureRecord>());
    record = kept_.back().get();
    if (before) {
      record->launches = before->launches;
      record->launches_dropped = before->launches_dropped;
      launches_kept_ += before->launches.size();
    }
    made_[graph] = record;
  }
  keep_within_bound(*record, launch);
}

bool GraphCaptures::keep_within_bound(CaptureRecord& record, const CapturedLaunch& launch) {
  if (launches_kept_ >= kMaxCapturedLaunches) {
    ++record.launches_dropped;
    return false;
  }
  ++launches_kept_;
  record.launches.push_back(launch);
  return true;
}

const std::vector<GraphBranch>* GraphCaptures::branches(const LaunchRecord& record) {
  const CaptureRecord* capture = capture_of(record);
  return capture && !capture->branches.empty() ? &capture->branches : nullptr;
}

NodeView GraphCaptures::nodes(const LaunchRecord& record, const volatile uint64_t* slots) {
  NodeView view;
  const CaptureRecord* capture = capture_of(record);
  // The slots hold the progress of the replay that ran last: the caller asks only of a replay that failed
  // (later replays of a graph are queued behind it and never run). A dropped record has no breadcrumb.
  if (!slots || !capture || capture->branches.empty() || capture->launches_dropped > 0) return view;
  std::vector<uint64_t> reached;  // per branch: the capture position its last breadcrumb wrote (0: none)
  for (const GraphBranch& branch : capture->branches) {
    if (branch.slot < 0) return view;  // a branch without a slot: how far it got is unknown
    uint64_t value = slots[branch.slot];
    if (value == kGraphNotStarted) return view;  // no replay's reset ran: none began
    reached.push_back(value);
  }
  // On each branch, the first captured launch past its breadcrumb did not complete; the others after it on
  // that branch cannot have started.
  std::vector<bool> seen(capture->branches.size(), false);
  for (size_t i = 0; i < capture->launches.size(); ++i) {
    uint16_t branch = capture->launches[i].branch;
    if (branch == CapturedLaunch::kNoBranch) return view;  // captured before breadcrumbs were set up
    if (seen[branch] || i + 1 <= reached[branch]) continue;
    seen[branch] = true;
    view.unfinished.push_back(i);
  }
  view.known = true;
  return view;
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT
