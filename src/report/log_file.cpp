// The log file (see log_file.h).
#include "report/log_file.h"

namespace blockrun {

void LogFileSink::sink_it_(const spdlog::details::log_msg& message) {
  spdlog::memory_buf_t line;
  formatter_->format(message, line);
  file_->write_record(line.data(), line.size());
}

std::string log_prefix(const LogAuthor& author) {
  if (author.own_file) return "[cuda-blockrun]";
  if (author.rank)
    return "[cuda-blockrun " + std::to_string(author.pid) + " rank " + std::to_string(*author.rank) + "]";
  if (author.forked_child) return "[cuda-blockrun " + std::to_string(author.pid) + "]";
  return "[cuda-blockrun]";
}

bool path_names_process(const std::string& pattern) {
  for (size_t i = 0; i + 1 < pattern.size(); ++i) {
    if (pattern[i] != '%') continue;
    if (pattern[i + 1] == 'p') return true;
    ++i;  // %% and the other directives: the next byte is not a directive's start
  }
  return false;
}

std::string cannot_open(const char* what, const std::string& path, const std::string& reason,
                        const char* instead) {
  return std::string("cannot open the ") + what + " file '" + path + "' (" + reason + "); " + instead;
}

std::shared_ptr<LogFileSink> open_log_file(const std::string& path, bool private_file, std::string* problem) {
  std::string reason;
  std::unique_ptr<OutputFile> file = OutputFile::open(path, private_file, &reason);
  if (!file) {
    *problem = cannot_open("log", path, reason, "logging to standard error");
    return nullptr;
  }
  return std::make_shared<LogFileSink>(std::move(file));
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT
