// `cuda-blockrun report FILES...|DIR`: the reports of every process of a job (one per rank, host and pid)
// merged into one verdict: which process hit its first error first, its culprit, and which others failed
// after it and how (docs/distributed.md). Plain logic over the reports' JSON records; the wrapper reads the
// files and prints the result.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "report_json.h"

namespace blockrun {

// What one process's report says of it.
struct ProcessOutcome {
  std::string report;    // the file it came from
  bool started = false;  // a `start` record was read (else who it was is unknown)
  std::string host;
  long pid = 0;
  long rank = 0;
  std::string process;
  std::optional<Json> first_error;
  std::optional<Json> fatal_signal;
  std::optional<Json> summary;
  size_t unreadable = 0;       // lines that were not JSON (a record cut short when the process was killed)
  bool shared_file = false;    // several processes wrote this one file (its path lacked %p)
  std::string run;             // its start record's run id ("" for none)
  double started_at = 0;       // its start record's time (seconds since 1970), where launch times count from
  std::vector<Json> launches;  // its `launch` records (--log-launches), where read_job was asked to keep them
  size_t earlier_runs = 0;  // processes of earlier runs in the same file, left out (a report path used again)

  enum class Kind {
    CudaError,   // its first CUDA error
    Collective,  // its first CUDA error, in (or surfaced while) an NCCL collective ran
    Fault,       // a fatal signal from a fault of its own (SIGSEGV, ...) and no CUDA error
    Killed,      // a fatal signal sent to it (a watchdog's abort(), the launcher) and no CUDA error
    CutShort,  // the report ends with neither a summary nor a fatal signal: killed outright, or still running
    Clean,     // ran to its exit without a CUDA error
  };
  Kind kind() const;
  // When it failed (seconds since 1970): its first error's time, else its fatal signal's; nullopt for
  // CutShort and Clean.
  std::optional<double> failed_at() const;
  // The collective its first error points at (its launch's, else its first suspect's), or "".
  std::string collective() const;
  // "rank 1 (pid 4242 on gpu7, python3)".
  std::string who() const;
};

// `reports`: (path, contents) of each report file. A file that several processes appended to (a path
// without %p) is split at each `start` record; of a file that several runs appended to (start records with
// different run ids), only the processes of its last run are kept. `keep_launches`: each process keeps its
// `launch` records (by their pid where several processes share the file), for a trace of the job.
std::vector<ProcessOutcome> read_job(const std::vector<std::pair<std::string, std::string>>& reports,
                                     bool keep_launches = false);

// The process that failed first, as an index into `processes`, or -1 when none failed. Failures of a
// process's own (a CUDA error outside NCCL, a fault signal) come first, earliest first; then errors in NCCL
// collectives (usually a peer's failure seen from the other side); then signals sent to a process (a
// reaction: a watchdog's abort(), the launcher tearing the job down).
int first_failure(const std::vector<ProcessOutcome>& processes);

// What the job came to, for `cuda-blockrun report`'s exit status: a process failed (first_failure), else some
// report ends cut short (a process killed outright, or still running: how it ended is unknown), else every
// process ran to its exit without a CUDA error.
enum class JobOutcome { Clean, CutShort, Failed };
JobOutcome job_outcome(const std::vector<ProcessOutcome>& processes);

// The verdict as text lines (without prefix), and as one JSON object.
std::vector<std::string> describe_job(const std::vector<ProcessOutcome>& processes);
std::string job_json(const std::vector<ProcessOutcome>& processes);

}  // namespace blockrun
// SPDX-License-Identifier: MIT
