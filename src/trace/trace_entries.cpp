// The engine's launches, calls and first error as trace entries (trace_entries.h).
#include "trace/trace_entries.h"

#include <fmt/format.h>

#include <cstdio>
#include <string>

#include "cuda/cuda_errors.h"
#include "report/launch_writer.h"
#include "report/views.h"

namespace blockrun::trace {

TraceEntry launch_entry(const Launch& launch, ErrorCode launch_result, BlockOutcome outcome,
                        ErrorCode sync_result) {
  const LaunchRecord& record = launch.record;
  TraceEntry entry;
  entry.began_ns = launch.began_ns;
  entry.ended_ns = launch.ended_ns;
  entry.sequence = record.sequence;
  entry.kernel_ordinal = record.kernel_ordinal;
  entry.kernel = record.kernel;
  entry.graph = record.graph;
  entry.api = record.api;
  entry.driver_api = record.driver_api;
  entry.library_api = record.library_api;
  entry.library = record.library;
  entry.stream = record.stream;
  entry.grid = record.grid;
  entry.block = record.block;
  entry.shared_memory = record.shared_memory;
  entry.python_site = record.python_site;
  entry.graph_replay = record.graph_replay;
  if (!launch_result.ok()) {
    entry.result = launch_result;
    entry.outcome = error_meaning(launch_result) == ErrorMeaning::Asynchronous ? EntryOutcome::Refused
                                                                               : EntryOutcome::Failed;
  } else if (outcome == BlockOutcome::Synchronized) {
    entry.result = sync_result;
    entry.outcome = sync_result.ok() ? EntryOutcome::Blocked : EntryOutcome::BlockedFailed;
    entry.wait_began_ns = launch.wait_began_ns;
    entry.gpu_ns = launch.timing.gpu_ns;
  } else if (outcome == BlockOutcome::SkippedCapture) {
    entry.outcome = EntryOutcome::CaptureSkipped;
  } else if (outcome == BlockOutcome::SkippedUnknown) {
    entry.outcome = EntryOutcome::NotBlockedUnknown;
  } else {
    entry.outcome = record.in_capture ? EntryOutcome::Captured : EntryOutcome::Launched;
  }
  return entry;
}

TraceEntry call_entry(EntryKind kind, const char* api, CallSpan span, StreamId stream) {
  TraceEntry entry;
  entry.kind = kind;
  entry.began_ns = span.began_ns;
  entry.ended_ns = span.returned_ns;
  entry.api = api;
  entry.stream = stream;
  return entry;
}

ErrorFacts error_facts(const Finding& finding, const SurfacingCall& call) {
  ErrorFacts facts;
  facts.thread = finding.thread;
  facts.began_ns = call.began_ns;
  facts.returned_ns = call.returned_ns;
  facts.call_has_slice = call.has_slice;
  auto copy = [](char* to, size_t size, const std::string& text) {
    std::snprintf(to, size, "%s", text.c_str());
  };
  copy(facts.api, sizeof facts.api, finding.api);
  copy(facts.error, sizeof facts.error, finding.text.name);
  copy(facts.how, sizeof facts.how, finding.how);
  facts.certainty = finding.culprit && finding.exact ? "exact" : "suspects";
  facts.method = found_by_name(finding.found_by);
  if (const LaunchView* culprit = finding.culprit.get()) {
    const LaunchRecord& record = *culprit->record;
    facts.culprit_sequence = record.sequence;
    copy(facts.culprit, sizeof facts.culprit,
         record.kernel && record.kernel_ordinal
             ? fmt::format("{}, launch #{}",
                           kernel_launch_text(record.kernel->name.base, record.kernel_ordinal),
                           record.sequence)
             : launch_name(record));
    const GraphCaptureView* graph = culprit->graph.get();
    if (graph && graph->nodes.known && graph->nodes.unfinished.size() == 1) {
      size_t index = graph->nodes.unfinished.front();
      const CapturedLaunch& node = graph->capture->launches[index];
      std::string base = node.kernel ? node.kernel->name.base : node.library_api ? node.library_api : "?";
      copy(facts.failed_node, sizeof facts.failed_node, fmt::format("node {}: {}", index + 1, base));
    }
  }
  if (const LaunchView* refused = finding.refused.get()) facts.refused_sequence = refused->record->sequence;
  facts.others_are_candidates = finding.found_by == FoundBy::Breadcrumbs;
  for (const LaunchView& other : finding.suspects) {
    if (facts.other_count == ErrorFacts::kOthers) break;
    facts.others[facts.other_count++] = other.record->sequence;
  }
  return facts;
}

}  // namespace blockrun::trace
// SPDX-License-Identifier: MIT
