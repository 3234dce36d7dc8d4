// The log file: opened so that a planted symbolic link is never followed (O_NOFOLLOW), not inherited
// by programs the host executes (O_CLOEXEC), appended to (several processes may share one path), and
// written with one write(2) per line, so that what was logged is on disk even if the process dies next.
#pragma once

#include <spdlog/sinks/base_sink.h>

#include <memory>
#include <mutex>
#include <string>

namespace blockrun {

class LogFileSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit LogFileSink(int fd) : fd_(fd) {}
  ~LogFileSink() override;

 protected:
  void sink_it_(const spdlog::details::log_msg& message) override;
  void flush_() override {}

 private:
  int fd_;
};

// Opens `path` for the log (mode 0644 when created). Returns nullptr and sets *problem to a sentence
// for the user when it cannot be used.
std::shared_ptr<LogFileSink> open_log_file(const std::string& path, std::string* problem);

}  // namespace blockrun
