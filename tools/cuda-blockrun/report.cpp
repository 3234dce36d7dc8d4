// `cuda-blockrun report`: merges the reports of a job's processes into one verdict (docs/distributed.md).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "cli.h"
#include "job_report.h"

namespace blockrun::cli {

// `cuda-blockrun report [--json] FILE...|DIR`: exit status 0 with a verdict, 2 when nothing could be read.
int report_command(int argc, char** argv) {
  bool as_json = false;
  std::vector<std::string> paths;
  for (int index = 0; index < argc; ++index) {
    std::string argument = argv[index];
    if (argument == "--json") {
      as_json = true;
    } else if (argument == "--help" || argument == "-h") {
      print_usage(stdout, false);
      return 0;
    } else if (argument.rfind("--", 0) == 0 && argument != "--") {
      usage_error("report: unknown option '" + argument + "' (accepted: --json)");
    } else if (argument != "--") {
      paths.push_back(argument);
    }
  }
  if (paths.empty()) usage_error("report: give the report files, or a directory of them (*.jsonl)");
  std::vector<std::pair<std::string, std::string>> reports;
  auto read = [&](const std::filesystem::path& path) {
    std::optional<std::string> contents = read_file(path);
    if (!contents) usage_error("report: cannot read '" + path.string() + "': " + std::strerror(errno));
    reports.emplace_back(path.string(), std::move(*contents));
  };
  for (const std::string& path : paths) {
    std::error_code error;
    std::filesystem::file_status status = std::filesystem::status(path, error);
    if (!std::filesystem::exists(status)) usage_error("report: no such file or directory: '" + path + "'");
    if (!std::filesystem::is_directory(status)) {
      read(path);
      continue;
    }
    std::vector<std::filesystem::path> found = files_in(path, "", ".jsonl");
    if (found.empty()) usage_error("report: no *.jsonl report files in '" + path + "'");
    for (const std::filesystem::path& file : found) read(file);
  }
  std::vector<blockrun::ProcessOutcome> processes = blockrun::read_job(reports);
  if (as_json) {
    std::printf("%s\n", blockrun::job_json(processes).c_str());
  } else {
    for (const std::string& line : blockrun::describe_job(processes)) std::printf("%s\n", line.c_str());
  }
  return 0;
}

}  // namespace blockrun::cli
