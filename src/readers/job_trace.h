// `cuda-blockrun report --trace OUT.json FILES...`: the JSON-lines reports of a job's processes, written with
// --log-launches, as one timeline (docs/trace.md): a process per rank, each with a track per host thread, and
// each process's first error marked where it surfaced with arrows from its culprit or suspects. Written by
// the same writer as the shim's --trace (trace/trace_writer.h), so both traces say the same things the same
// way.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "job_report.h"
#include "report/output_file.h"

namespace blockrun {

struct JobTrace {
  bool written = false;
  size_t processes = 0;         // processes in the trace (those whose start record was read)
  size_t launches = 0;          // launch slices
  size_t without_launches = 0;  // processes with no launch records (not run with --log-launches)
  size_t not_read_again = 0;    // processes whose report could not be read again for its launches
  std::string problem;          // why, for the first of them ("r.0.jsonl: No such file or directory")
};

// Writes the trace of `processes` (read_job, or a JobReader) into `file`, emptied first. Each process's
// launch records are taken one at a time (for_each_launch: its report read again where they were not kept),
// so that memory holds one record, not a rank's report (issue 40, N4).
JobTrace write_job_trace(const std::vector<ProcessOutcome>& processes, OutputFile& file);

}  // namespace blockrun
// SPDX-License-Identifier: MIT
