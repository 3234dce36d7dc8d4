// `cuda-blockrun report FILES...|DIR`: the reports of every process of a job (one per rank, host and pid)
// merged into one verdict: which process hit its first error first, its culprit, and which others failed
// after it and how (docs/distributed.md). Plain logic over the reports' JSON records; the wrapper reads the
// files and prints the result.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
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
  bool launches_kept = false;  // `launches` holds them all (else for_each_launch reads its file again)
  size_t earlier_runs = 0;  // processes of earlier runs in the same file, left out (a report path used again)
  size_t ordinal = 0;       // which process of its file it is (RecordOwners), for reading its records again
  std::vector<std::string> argv;  // its start record's command line (empty where it has none)

  enum class Kind {
    CudaError,   // its first CUDA error
    Collective,  // its first CUDA error, in (or surfaced while) an NCCL collective ran
    Fault,       // a fatal signal from a fault of its own (SIGSEGV, ...) and no CUDA error
    Killed,      // a fatal signal sent to it (a watchdog's abort(), the launcher) and no CUDA error
    // The report has a start and no end (neither a summary nor a fatal signal): how the process ended is
    // unknown (a SIGKILL, an end that skipped the shim's exit code, or still running).
    CutShort,
    Clean,  // ran to its exit without a CUDA error
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

// Which process of one report file each record is. The processes of a file are its start records, in order
// (records before the first start record are the first process's); processes sharing the file interleave
// their records, and each says whose it is (`pid`: the latest started process of that pid). A record without
// one (earlier shims wrote it on launch records only) goes to the latest started process, which is right
// where the processes did not overlap. The same for the verdict and for reading a process's launches again.
class RecordOwners {
 public:
  // A start record of process `pid`: the ordinal of its process (0 for the file's first).
  size_t start(long pid);
  // The ordinal of the process a record of `pid` (-1: none given) goes to.
  size_t owner(long pid) const;
  size_t processes() const { return pids_.size(); }

 private:
  std::vector<long> pids_ = {0};  // by ordinal; the first stands for records before any start record
  bool started_last_ = false;
};

// Reads a job's report files one line at a time, keeping of each process only what the verdict needs (its
// start record, first error, fatal signal and summary), so that memory does not grow with the launch records
// (a million per rank: issue 40, N4). read_job is this over files in memory.
class JobReader {
 public:
  // The lines of the file at `path` follow, then end_file(). `keep_launches`: its processes keep their launch
  // records (for a trace from a file that cannot be read twice, such as a pipe).
  void begin_file(const std::string& path, bool keep_launches = false);
  void add_line(std::string_view line);
  // Whether the file was a report of this tool: one that has neither a start record nor any other record of a
  // report (a training job's metrics.jsonl beside the reports: issue 42) is left out, not taken for a process
  // that died before it wrote anything.
  bool end_file();
  // The processes of every file read, in the order read.
  std::vector<ProcessOutcome> take() { return std::move(processes_); }

 private:
  void add_record(Json&& record);

  std::vector<ProcessOutcome> processes_;
  std::vector<size_t> of_file_;  // this file's processes, by ordinal: indexes into processes_
  RecordOwners owners_;
  size_t first_of_file_ = 0;
  size_t unreadable_ = 0;
  bool saw_launch_ = false;  // a launch record was read in this file (a report, if one without its start)
  bool keep_launches_ = false;
  std::string path_;
};

// Gives each `launch` record of `process`, in order, to `visit`: those it kept, else read again from its
// report file one line at a time. False where the file could not be read again (`error` says why).
bool for_each_launch(const ProcessOutcome& process, const std::function<void(const Json&)>& visit,
                     std::string* error = nullptr);

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
// report has no end record (how that process ended is unknown: a SIGKILL, an end that skipped the shim's exit
// code, or still running), else every process ran to its exit without a CUDA error.
enum class JobOutcome { Clean, CutShort, Failed };
JobOutcome job_outcome(const std::vector<ProcessOutcome>& processes);

// The command that pins the first failure's culprit, where its report does not already name it exactly with
// its call site: "" where there is none to give (no CUDA error, or pinned already). In a job, the flags that
// make the shim act in that rank alone (`--ranks N --block 'RULE'`, docs/distributed.md); for a process
// alone, its report's `cuda-blockrun --localize -- ...`.
std::string pin_command(const ProcessOutcome& process, bool in_job);

// The verdict as text lines (without prefix), and as one JSON object.
std::vector<std::string> describe_job(const std::vector<ProcessOutcome>& processes);
std::string job_json(const std::vector<ProcessOutcome>& processes);

}  // namespace blockrun
// SPDX-License-Identifier: MIT
