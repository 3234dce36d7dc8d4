// The log: spdlog's lines written to the log file, or to standard error, through an OutputFile (one record a
// line, whole or not at all; see output_file.h), so that what was logged is on disk even if the process
// dies next.
#pragma once

#include <spdlog/sinks/base_sink.h>

#include <memory>
#include <mutex>
#include <string>

#include "output_file.h"

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

// Opens `path` for the log (mode 0644 when created, 0600 with `private_file`). Returns nullptr and sets
// *problem to a sentence for the user when it cannot be used.
std::shared_ptr<LogFileSink> open_log_file(const std::string& path, bool private_file, std::string* problem);

// The sentence for the user about a file that cannot be used: "cannot open the <what> file '<path>'
// (<reason>); <instead>".
std::string cannot_open(const char* what, const std::string& path, const std::string& reason,
                        const char* instead);

}  // namespace blockrun
