// Telling the first error (its `first_error` record and its lines in the log), a blocked launch that failed
// (`blocked_error`) and a logged launch (`launch`), from the engine's values (views.h). Decides nothing.
#pragma once

#include <cstddef>
#include <string>

#include "report/launch_writer.h"
#include "report/views.h"

namespace blockrun {

// Seconds since the epoch, with microseconds: what merges the reports of several processes.
double epoch_seconds();

// `pid`, in this record and the others: the process's, which tells whose record it is in a report file that
// several processes share (their records interleave).
std::string first_error_json(const Finding& finding, long pid);
// `stack`: every frame of each launch (CUDA_BLOCKRUN_STACK); `print_limit`: at most this many suspects (or
// breadcrumb candidates) are told, the rest counted (CUDA_BLOCKRUN_PRINT_LIMIT, 0: all).
void log_first_error(spdlog::logger& logger, const Finding& finding, bool stack, size_t print_limit);
// Whether the log of the first error tells a call site without file:line (its culprit's, where it surfaced
// or a suspect's).
bool tells_call_site_without_line(const Finding& finding);
// The summary's word for the first error: `cudaErrorIllegalAddress at launch #51`.
std::string first_error_summary(const Finding& finding);

std::string blocked_error_json(const LaunchView& launch, const ErrorText& text, const char* sync_api,
                               ErrorCode code, long pid);
// When a launch began and ended, and its blocking wait began (nanoseconds since the start record, 0: not
// known), and its GPU time (-1: not measured): what `cuda-blockrun report --trace` lays a launch out by.
struct LaunchTimes {
  uint64_t began_ns = 0, ended_ns = 0, wait_began_ns = 0;
  int64_t gpu_ns = -1;
};
// `outcome`: what happened ("" for launched); `result`: the launch's error name (nullptr: it succeeded).
std::string launch_json(const LaunchView& launch, const char* outcome, const std::string* result, long pid,
                        const LaunchTimes& times);

}  // namespace blockrun
// SPDX-License-Identifier: MIT
