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
  int fd() const { return fd_; }

 protected:
  void sink_it_(const spdlog::details::log_msg& message) override;
  void flush_() override {}

 private:
  int fd_;
};

// Opens `path` for the log (mode 0644 when created). Returns nullptr and sets *problem to a sentence
// for the user when it cannot be used.
// `private_file`: created with mode 0600 instead of 0644 (CUDA_BLOCKRUN_PRIVATE_FILES).
std::shared_ptr<LogFileSink> open_log_file(const std::string& path, bool private_file, std::string* problem);

// What the log and the report files share: open for appending, created 0644 (0600 if private), never through
// a symbolic link, not inherited across exec. Returns the descriptor, or -1 with *problem saying (for the
// user) why "the <what> file" cannot be used and what happens instead (`instead`).
int open_output_file(const std::string& path, const char* what, const char* instead, bool private_file,
                     std::string* problem);

// Writes all of `data` (retrying partial writes and EINTR); a full disk loses the data, nothing else.
void write_fully(int fd, const char* data, size_t size);

}  // namespace blockrun
