// What the engine decided, as plain values for the writers: a launch with everything resolved for it once
// (its call site symbolized, its Python line, a graph's capture with where each of its launches was made and
// which node failed), and the finding of the first error. The writers (launch_writer.h, error_writer.h) turn
// these into JSON records and log text and decide nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "callsites/callsite.h"
#include "cuda/cuda_errors.h"
#include "pieces/graph_captures.h"
#include "pieces/pin_advice.h"
#include "records.h"
#include "callsites/sites.h"

namespace blockrun {

// Of a graph's captured launches: told in the log, and in the report.
inline constexpr size_t kCapturedLaunchesLogged = 16;
inline constexpr size_t kCapturedLaunchesReported = 1024;

// One launch of a graph's capture, as told: where it was captured.
struct CapturedLaunchView {
  size_t index = 0;  // into CaptureRecord::launches
  Site site;
  const PythonFrame* python = nullptr;
};

// A graph launch's capture: where it began, its launches (the first `told` of them and any unfinished one
// past those, in capture order) and, for a replay that failed, what the graph breadcrumbs say.
struct GraphCaptureView {
  const CaptureRecord* capture = nullptr;
  Site begun_at;
  const PythonFrame* begun_python = nullptr;
  std::vector<CapturedLaunchView> launches;
  NodeView nodes;
  const CapturedLaunchView* launch(size_t index) const;  // nullptr: not resolved
};

// A launch as the report and the log tell it.
struct LaunchView {
  const LaunchRecord* record = nullptr;
  const CallStack* stack = nullptr;  // the stack walked (nullptr: only `record.caller` is known)
  Site site;
  PythonCallSite python;
  std::unique_ptr<GraphCaptureView> graph;  // a graph launch whose capture the engine saw
  // The launch failed (or is one of the breadcrumbs' candidates): a graph launch then says which node did.
  bool failed = false;
};

// How the culprit (or the suspects) of the first error was found: the report's `method`.
enum class FoundBy { Launch, Blocking, Breadcrumbs, Host };
const char* found_by_name(FoundBy found_by);

// The first CUDA error of the process, as decided: what returned it, the culprit or the suspects, and what a
// second run must block to pin it.
struct Finding {
  const char* api = nullptr;  // the call that returned it (never null: "(unknown call)")
  ErrorCode result;
  ErrorText text;
  ErrorMeaning meaning = ErrorMeaning::Unknown;
  EnvironmentAdvice environment;  // an environment error's problem and fix (cuda_errors.def)
  FoundBy found_by = FoundBy::Host;
  std::string how;           // the launch's own account, or where it surfaced
  bool launch_told = false;  // `how` comes from the launch that failed (not from where it surfaced)
  bool at_exit = false;      // seen only by the shim's check at exit
  bool exact = false;        // `culprit` is proven
  std::unique_ptr<LaunchView> culprit;
  std::unique_ptr<LaunchView> refused;  // a launch the context refused: where it surfaced
  std::vector<LaunchView> suspects;
  bool breadcrumbs_read = false;                                // the report lists the streams lost
  std::vector<std::pair<StreamId, uint64_t>> breadcrumbs_lost;  // stream, the last launch known complete
  size_t ring = 0;                                              // launches kept per stream
  std::string pin_rule;
  bool pin_rule_useful = false;  // not exact, or found without its full call site (breadcrumbs)
  SuspectTally tally;            // how many launches could have faulted, against the suspects listed
  PinAdvice advice;              // what the log offers first to pin it (pin_advice.h), with pin_rule_useful
  std::vector<std::string> driver_logs;
  // Where it surfaced: the host thread, and when the call that returned it began and returned (nanoseconds
  // since the start record; 0 where calls are not timed, without --trace and --log-launches).
  uint32_t thread = 0;
  uint64_t surfaced_began_ns = 0, surfaced_ns = 0;
};

}  // namespace blockrun
// SPDX-License-Identifier: MIT
