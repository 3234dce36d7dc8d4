// Graphs and their captures alone (src/pieces/graph_captures.h): a capture's launches are kept in order and
// linked to the executable graph made from it, a failed capture keeps nothing, and the graph breadcrumbs say
// which node of a replay did not complete.
#include <gtest/gtest.h>

#include <memory>

#include "pieces/breadcrumb_slots.h"
#include "pieces/graph_captures.h"

namespace blockrun {
namespace {

const void* const kGraph = reinterpret_cast<const void*>(0x6000);
const void* const kExec = reinterpret_cast<const void*>(0x7000);

CapturedLaunch launch_on(uintptr_t stream, uint64_t sequence) {
  CapturedLaunch launch;
  launch.sequence = sequence;
  launch.stream.handle = reinterpret_cast<const void*>(stream);
  return launch;
}

LaunchRecord graph_launch(const GraphInfo* graph) {
  LaunchRecord record;
  record.graph = graph;
  return record;
}

TEST(GraphCaptures, ACapturesLaunchesAreKeptInOrderAndLinkedToItsGraph) {
  GraphCaptures graphs;
  graphs.begin(7, std::make_unique<CaptureRecord>());
  graphs.keep_launch(7, launch_on(0x1, 11), nullptr);
  graphs.keep_launch(7, launch_on(0x1, 12), nullptr);
  graphs.end(7, kGraph);
  const GraphInfo* info = graphs.note_graph(kExec, 2, kGraph);
  const CaptureRecord* capture = info->capture.load();
  ASSERT_NE(capture, nullptr);
  ASSERT_EQ(capture->launches.size(), 2u);
  EXPECT_EQ(capture->launches[0].sequence, 11u);
  EXPECT_EQ(capture->launches[1].sequence, 12u);
  EXPECT_TRUE(capture->linked);
  EXPECT_EQ(info->nodes, 2u);
  EXPECT_EQ(graphs.graph(kExec), info);
}

TEST(GraphCaptures, AFailedCaptureKeepsNothing) {
  GraphCaptures graphs;
  graphs.begin(7, std::make_unique<CaptureRecord>());
  graphs.keep_launch(7, launch_on(0x1, 11), nullptr);
  graphs.end(7, nullptr);
  EXPECT_EQ(graphs.note_graph(kExec, 1, kGraph)->capture.load(), nullptr);
  // A launch into a capture the engine never saw begin is not kept either.
  EXPECT_EQ(graphs.keep_launch(8, launch_on(0x1, 12), nullptr).graph_slot, -1);
}

TEST(GraphCaptures, GraphBreadcrumbsNameTheFirstUnfinishedNodeOfEachBranch) {
  volatile uint64_t slots[2] = {0, 0};
  BreadcrumbSlots breadcrumbs;
  breadcrumbs.set(slots, 2);
  GraphCaptures graphs;
  graphs.begin(7, std::make_unique<CaptureRecord>());
  CapturePlace first = graphs.keep_launch(7, launch_on(0x1, 11), &breadcrumbs);
  CapturePlace second = graphs.keep_launch(7, launch_on(0x2, 12), &breadcrumbs);
  CapturePlace third = graphs.keep_launch(7, launch_on(0x1, 13), &breadcrumbs);
  EXPECT_EQ(first.graph_slot, 0);
  EXPECT_EQ(second.graph_slot, 1);
  EXPECT_EQ(third.graph_slot, 0);
  EXPECT_EQ(third.position, 3u);
  graphs.end(7, kGraph);
  // The breadcrumb nodes the shim added are not the program's.
  const GraphInfo* info = graphs.note_graph(kExec, 6, kGraph);
  EXPECT_EQ(info->nodes, 3u);
  LaunchRecord record = graph_launch(info);
  ASSERT_NE(GraphCaptures::branches(record), nullptr);
  EXPECT_EQ(GraphCaptures::branches(record)->size(), 2u);
  EXPECT_FALSE(GraphCaptures::nodes(record, slots).known);  // no replay began: slots say so
  slots[0] = 1;  // branch 0 completed its first launch (position 1); branch 1 none
  slots[1] = 0;
  NodeView nodes = GraphCaptures::nodes(record, slots);
  ASSERT_TRUE(nodes.known);
  EXPECT_EQ(nodes.unfinished, (std::vector<size_t>{1, 2}));
  slots[1] = 2;  // branch 1 done: only the third launch is left
  EXPECT_EQ(GraphCaptures::nodes(record, slots).unfinished, (std::vector<size_t>{2}));
}

}  // namespace
}  // namespace blockrun
// SPDX-License-Identifier: MIT
