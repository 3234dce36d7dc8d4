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
#include "suggest.h"

namespace blockrun::cli {

// `cuda-blockrun report [--json] FILE...|DIR`'s exit status, so that a CI job fails with the job it reports
// on (docs/distributed.md): 0 every process ran clean, 1 a process failed, 3 none failed but a report was cut
// short (how that process ended is unknown); 2 (kUsageError) when nothing could be read.
int report_exit_status(blockrun::JobOutcome outcome) {
  switch (outcome) {
    case blockrun::JobOutcome::Clean:
      return 0;
    case blockrun::JobOutcome::Failed:
      return 1;
    case blockrun::JobOutcome::CutShort:
      return 3;
  }
  return 1;
}

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
      usage_error("report: unknown option '" + argument + "'" +
                  blockrun::did_you_mean(argument, {"--json", "--help"}) + " (accepted: --json)");
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
  return report_exit_status(blockrun::job_outcome(processes));
}

}  // namespace blockrun::cli
// SPDX-License-Identifier: MIT
