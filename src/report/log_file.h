// The log: spdlog's lines written to the log file, or to standard error, through an OutputFile (one record a
// line, whole or not at all; see output_file.h), so that what was logged is on disk even if the process
// dies next.
#pragma once

#include <spdlog/sinks/base_sink.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "report/output_file.h"

namespace blockrun {

class LogFileSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit LogFileSink(std::shared_ptr<OutputFile> file) : file_(std::move(file)) {}
  OutputFile* file() const { return file_.get(); }

 protected:
  void sink_it_(const spdlog::details::log_msg& message) override;
  void flush_() override {}

 private:
  std::shared_ptr<OutputFile> file_;
};

// Who wrote the log's lines, so that processes sharing a terminal or a file can be told apart (mpirun,
// torchrun, a DataLoader's forked workers), as valgrind's ==PID== and NCCL's `host:pid [rank]` are.
struct LogAuthor {
  long pid = 0;
  std::optional<long> rank;   // a launcher's rank variable is set (rank_variable)
  bool forked_child = false;  // forked from a process that runs the shim, and not replaced by exec since
  bool own_file = false;      // the log is a file whose path names the process (%p): no other writes to it
};
// What starts each line: `[cuda-blockrun]` for a process alone (or in its own %p file), `[cuda-blockrun 12345
// rank 3]` where a rank variable is set, `[cuda-blockrun 12345]` in a forked child. Where the log may be
// shared with processes that are told apart, so is this one: a rank's forked children carry their rank too.
std::string log_prefix(const LogAuthor& author);
// Whether a log path (as configured: %p, %r, %h, %% unexpanded) names the process: each process gets its own.
bool path_names_process(const std::string& pattern);

// Opens `path` for the log (mode 0644 when created, 0600 with `private_file`). Returns nullptr and sets
// *problem to a sentence for the user when it cannot be used.
std::shared_ptr<LogFileSink> open_log_file(const std::string& path, bool private_file, std::string* problem);

// The sentence for the user about a file that cannot be used: "cannot open the <what> file '<path>'
// (<reason>); <instead>".
std::string cannot_open(const char* what, const std::string& path, const std::string& reason,
                        const char* instead);

}  // namespace blockrun
// SPDX-License-Identifier: MIT
