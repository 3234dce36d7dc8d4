// `cuda-blockrun --localize`: what the reports of one run of a program say about its first CUDA error,
// what a second run must block to pin the culprit, and the one verdict printed at the end
// (docs/localize.md). Plain logic over the report's JSON records; the wrapper runs the program.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "report_json.h"

namespace blockrun {

// The first CUDA error of a run: the earliest `first_error` record among its processes' reports.
struct RunFinding {
  bool found = false;
  Json first_error;
  std::string report;     // the file it came from
  size_t reports = 0;     // report files read
  size_t unreadable = 0;  // lines that were not JSON (a report cut short by a crash)
};

// `reports`: (path, contents) of every report file the run wrote.
RunFinding find_first_error(const std::vector<std::pair<std::string, std::string>>& reports);
// The same of the files at `paths`, each read a piece at a time: memory holds a line and the first error, not
// a report (a million launch records with --log-launches: issue 40, N4). A file that cannot be read counts as
// read, with nothing in it.
RunFinding find_first_error_in_files(const std::vector<std::string>& paths);

// The error is pinned to its launch: a blocked launch whose synchronize failed with everything before it
// complete, or a launch that failed itself.
bool is_exact(const Json& first_error);

// The error is the environment's (no usable driver or device: the report's meaning `environment`): no launch
// is at fault, and no second run can pin one.
bool is_environment_error(const Json& first_error);

// Whether a second run is needed: the error is not pinned to its launch, or it is (found by breadcrumbs)
// but what was kept of the launch lacks its Python line (a Python program) or, without Python, a caller with
// file:line; a blocking synchronize inside the launch call captures the whole stack.
bool needs_second_run(const Json& first_error);

// Whether the culprit's Python line is known (the report's python_callsite).
bool has_python_line(const Json& first_error);

// Whether the second run needs the debug mode for graphs (CUDA_BLOCKRUN_GRAPH_BREADCRUMBS): the culprit or a
// suspect is a graph replay, whose failed node only breadcrumbs inside the graph can tell.
bool second_run_wants_graph_breadcrumbs(const Json& first_error);

// The --block rule for the second run: the report's pin rule (the suspected kernels; with breadcrumbs the
// culprit's or candidates' own launches, `stencil#13`), else `all`; each of its rules blocks alone
// (`block-alone`: everything before it completes first, other threads' launches wait), so that an error at
// its synchronize is its own whatever else was queued.
std::string second_run_policy(const Json& first_error);
// The third run's: every launch, alone.
inline constexpr const char* kThirdRunPolicy = "all block-alone";

// The error came back at the synchronize of a launch the run blocked (exact or not: a launch on another
// stream not known to have completed may have faulted instead).
bool at_blocked_launch(const Json& first_error);

enum class SecondRun {
  Pinned,  // exact, in a kernel the first run suspected, with the same error
  // exact, in a kernel the first run suspected, both errors a bad memory access (illegal, misaligned or
  // wrong-space address, launch failure) under different codes: the GPU does not always code one such
  // access the same way
  PinnedRecoded,
  NotPinned,  // it faulted again, but still not at a blocked launch
  NoFault,    // it ran without a CUDA error
  Diverged,   // exact, but in another kernel or with another error than the first run's
};
SecondRun compare_runs(const Json& first, const RunFinding& second);

// The verdict's lines (without prefix): kernel, launch number, stream; the error and the call that returned
// it; the C++ call site; the Python line.
std::vector<std::string> describe_culprit(const Json& first_error);
// One line per suspect of an unpinned error, oldest first.
std::vector<std::string> describe_suspects(const Json& first_error);

}  // namespace blockrun
// SPDX-License-Identifier: MIT
