// --localize: run 1 with nothing blocked and breadcrumbs on; run 2, where needed, blocking only what run 1
// found, each alone on the device; run 3, where run 2 could not pin it, blocking every launch alone; one
// verdict (docs/localize.md).
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli.h"
#include "config/config.h"
#include "localize.h"
#include "cuda/names.h"
#include "report/keys.h"
#include "report_json.h"

extern char** environ;

namespace blockrun::cli {

namespace {

// Every verdict line goes through here: its control bytes escaped, as the shim's log escapes them (issue 40,
// N9: a kernel named with ESC or BEL must not drive the terminal).
void say(const std::string& line) {
  std::fprintf(stderr, "[cuda-blockrun] %s\n", blockrun::printable(line, std::string::npos).c_str());
}

// Runs the program with `block` as its policy and its reports written under `directory` (one per
// process: %p), waits for it, and returns its status as a shell gives it (128 + N for signal N).
// `graph_breadcrumbs`: the debug mode for graphs, unless the user set it.
int run_once(char** program_argv, const std::string& block, const std::string& report_pattern,
             bool graph_breadcrumbs = false) {
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t child = fork();
  if (child < 0) {
    std::fprintf(stderr, "cuda-blockrun: cannot start the program: %s\n", std::strerror(errno));
    return kUsageError;
  }
  if (child == 0) {
    setenv(blockrun::variable::block, block.c_str(), 1);
    setenv(blockrun::variable::report, report_pattern.c_str(), 1);
    // Breadcrumbs unless the user turned them off (--breadcrumbs=0): in run 1 they name the culprit exactly;
    // in run 2 they show that the launches before the blocked one completed, so its failure is exact.
    setenv(blockrun::variable::breadcrumbs, "1", 0);
    if (graph_breadcrumbs) setenv(blockrun::variable::graph_breadcrumbs, "1", 0);
    exec_program(program_argv);
    _exit(127);
  }
  // The program's Ctrl-C is its own: the wrapper waits for it to end rather than dying first.
  int status = wait_for_program(child);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

// The report files of one run: `directory`/`prefix`*.jsonl (read a piece at a time, never whole: issue 40,
// N4).
std::vector<std::string> report_files(const std::string& directory, const std::string& prefix) {
  std::vector<std::string> reports;
  for (const std::filesystem::path& path : files_in(directory, prefix, ".jsonl"))
    reports.push_back(path.string());
  return reports;
}

void say_culprit(const blockrun::Json& first_error) {
  bool first = true;
  for (const std::string& line : blockrun::describe_culprit(first_error)) {
    say((first ? "localize: culprit: " : "  ") + line);
    first = false;
  }
}

void say_suspects(const blockrun::Json& first_error) {
  say("localize: the culprit is among the launches not known to have completed, oldest first:");
  for (const std::string& line : blockrun::describe_suspects(first_error)) say("    " + line);
}

// Run 1's finding, where run 2 could not improve on it: its culprit (found by breadcrumbs) or its suspects.
void say_first_finding(const blockrun::Json& first_error) {
  if (blockrun::is_exact(first_error)) {
    say_culprit(first_error);
    say("  found in run 1 by breadcrumbs (its call site is the caller of the CUDA entry point only)");
  } else {
    say_suspects(first_error);
  }
}

// A new directory for the runs' reports under $TMPDIR (else /tmp), or nullopt and a message.
std::optional<std::string> make_report_directory() {
  const char* temporary = std::getenv("TMPDIR");
  std::string directory =
      std::string(temporary && *temporary ? temporary : "/tmp") + "/cuda-blockrun-localize.XXXXXX";
  if (!mkdtemp(directory.data())) {
    std::fprintf(stderr, "cuda-blockrun: cannot create a directory for the reports (%s): %s\n",
                 directory.c_str(), std::strerror(errno));
    return std::nullopt;
  }
  return directory;
}

// Says what run 1 settled by itself, if it did: no report, no CUDA error, or a culprit that needs no second
// run. Returns whether it did.
bool run_one_settles_it(const blockrun::RunFinding& first, int status) {
  if (first.reports == 0) {
    say("localize: run 1 (exit status " + std::to_string(status) +
        ") wrote no report: no process used CUDA with the shim active (the program used no CUDA, or "
        "CUDA_BLOCKRUN=0, --process or --ranks left its processes out)");
    return true;
  }
  if (!first.found) {
    say("localize: no CUDA error in run 1 (exit status " + std::to_string(status) + "): nothing to localize");
    return true;
  }
  if (blockrun::is_environment_error(first.first_error)) {
    // No kernel is at fault, and a second run would meet the same machine (issue 42).
    const blockrun::Json& error = first.first_error;
    const blockrun::Json* environment = blockrun::object_member(error, blockrun::key::environment);
    say("localize: no usable CUDA driver or device, so no kernel is at fault: " +
        blockrun::string_member(error, blockrun::key::error) + " (" +
        blockrun::string_member(error, blockrun::key::message) + "), returned by " +
        blockrun::string_member(error, blockrun::key::surfaced_api) + " in run 1 (exit status " +
        std::to_string(status) + ")");
    if (environment) {
      say("  " + blockrun::string_member(*environment, blockrun::key::problem));
      say("  to fix it: " + blockrun::string_member(*environment, blockrun::key::fix));
    }
    say("  no second run: it would meet the same machine");
    return true;
  }
  if (blockrun::needs_second_run(first.first_error)) return false;
  say_culprit(first.first_error);
  if (blockrun::string_member(first.first_error, blockrun::key::method) == "breadcrumbs") {
    say("  found in run 1 by breadcrumbs, nothing blocked: the first launch on its stream that did not "
        "complete; its call site is the caller of the CUDA entry point" +
        std::string(blockrun::has_python_line(first.first_error) ? " and the Python line kept for the launch"
                                                                 : "") +
        ". No second run needed.");
  } else {
    say("  found in run 1: " + blockrun::string_member(first.first_error, blockrun::key::how));
  }
  return true;
}

// Why run 2 is needed and what it blocks.
void say_second_run_plan(const blockrun::Json& first_error, const std::string& policy, bool graphs) {
  bool exact = blockrun::is_exact(first_error);
  say("localize: run 1: " + blockrun::string_member(first_error, blockrun::key::error) + " surfaced at " +
      blockrun::string_member(first_error, blockrun::key::surfaced_api) +
      (exact ? graphs ? ", in a graph replay found by breadcrumbs, its node not known"
                      : ", its launch found by breadcrumbs but not where it was launched"
             : ", not pinned to a launch") +
      "; run 2: --block '" + policy + "'" +
      (graphs ? " --graph-breadcrumbs (breadcrumbs inside graphs)" : ""));
}

// Run 2 failed without pinning: what it saw, truthfully. At a blocked launch whose synchronize failed while
// launches on other streams were not known to have completed (any may have faulted: a sticky error is the
// context's), those are named; else it surfaced elsewhere.
void say_not_pinned(const blockrun::RunFinding& run, int number, const std::string& policy) {
  const blockrun::Json& error = run.first_error;
  std::string which = "run " + std::to_string(number) + " (--block '" + policy + "')";
  if (blockrun::at_blocked_launch(error)) {
    std::vector<std::string> culprit = blockrun::describe_culprit(error);
    say("localize: " + which + " failed with " + blockrun::string_member(error, blockrun::key::error) +
        " at the synchronize of a blocked launch, " + (culprit.empty() ? std::string("?") : culprit.front()) +
        ", but these launches had not completed and may have faulted instead:");
    for (const std::string& line : blockrun::describe_suspects(error)) say("    " + line);
  } else {
    say("localize: " + which + " failed with " + blockrun::string_member(error, blockrun::key::error) +
        " but not at a blocked launch: it surfaced at " +
        blockrun::string_member(error, blockrun::key::surfaced_api));
  }
}

// A run's verdict where it pinned run 1's error (Pinned, PinnedRecoded): its culprit and how it was found.
void say_pinned(const blockrun::Json& first_error, const blockrun::RunFinding& run,
                blockrun::SecondRun outcome, int number, const std::string& policy) {
  bool exact = blockrun::is_exact(first_error);
  // Recoded: the same launch, its bad memory access under another code than run 1's.
  bool recoded = outcome == blockrun::SecondRun::PinnedRecoded;
  say_culprit(run.first_error);
  std::string which = "run " + std::to_string(number) + ", which blocked '" + policy + "'";
  say(exact && number == 2 ? "  found in run 1 by breadcrumbs; " + which + ", confirmed " +
                                 (recoded ? "the launch" : "it") + " and took its call site"
                           : "  found in " + which + "; run 1 " +
                                 (recoded ? "failed unpinned" : "gave the same error unpinned"));
  if (recoded)
    say("  run 1 saw it as " + blockrun::string_member(first_error, blockrun::key::error) +
        ": a bad memory access both times, and the GPU does not always give one the same code");
}

// The verdict of a later run that did not pin run 1's error: why, and run 1's finding kept.
void say_unconfirmed(const blockrun::Json& first_error, const blockrun::RunFinding& run,
                     blockrun::SecondRun outcome, int number, const std::string& policy, int status) {
  std::string which = "run " + std::to_string(number);
  switch (outcome) {
    case blockrun::SecondRun::NotPinned:
      say_not_pinned(run, number, policy);
      say("localize: keeping run 1's finding. Try --block all.");
      break;
    case blockrun::SecondRun::NoFault:
      say("localize: " + which + " (--block '" + policy + "') ran without a CUDA error (exit status " +
          std::to_string(status) +
          "): the fault did not recur, so blocking changed what happened; keeping run 1's finding.");
      break;
    case blockrun::SecondRun::Diverged:
      say("localize: " + which +
          " diverged: it failed in another kernel or with another error than run 1; "
          "keeping run 1's finding. " +
          which + " found:");
      for (const std::string& line : blockrun::describe_culprit(run.first_error)) say("    " + line);
      break;
    default:
      break;
  }
  say_first_finding(first_error);
}

bool pinned(blockrun::SecondRun outcome) {
  return outcome == blockrun::SecondRun::Pinned || outcome == blockrun::SecondRun::PinnedRecoded;
}

// A run of the program with its own report files and its cost said once it ended.
struct TimedRun {
  int status = 0;
  blockrun::RunFinding finding;
};
TimedRun run_and_read(char** program_argv, const std::string& directory, int number,
                      const std::string& policy, bool graph_breadcrumbs = false) {
  std::string prefix = "run" + std::to_string(number) + ".";
  auto began = std::chrono::steady_clock::now();
  TimedRun run;
  run.status = run_once(program_argv, policy, directory + "/" + prefix + "%p.jsonl", graph_breadcrumbs);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  say(fmt::format("localize: run {} ended (exit status {}) after {:.1f} s", number, run.status, seconds));
  run.finding = blockrun::find_first_error_in_files(report_files(directory, prefix));
  return run;
}

}  // namespace

// Runs the program once with nothing blocked and, when its first CUDA error is not pinned to a launch, once
// more blocking only the suspects, each alone on the device, and, where that cannot pin it either, a third
// time blocking every launch alone (up to `max_runs`); prints one verdict. Returns the first run's status.
// `breadcrumbs`: whether the runs have them (on unless the user turned them off).
int localize_culprit(char** program_argv, bool breadcrumbs, int max_runs) {
  std::optional<std::string> directory = make_report_directory();
  if (!directory) return kUsageError;
  say(std::string("localize: run 1: nothing blocked, breadcrumbs ") + (breadcrumbs ? "on" : "off") +
      " (reports in " + *directory + ")");
  TimedRun first = run_and_read(program_argv, *directory, 1, "none");
  if (run_one_settles_it(first.finding, first.status)) return first.status;
  const blockrun::Json& first_error = first.finding.first_error;
  if (max_runs < 2) {
    say("localize: --max-runs 1: no second run; run 1's finding:");
    say_first_finding(first_error);
    return first.status;
  }
  std::string policy = blockrun::second_run_policy(first_error);
  bool graphs = blockrun::second_run_wants_graph_breadcrumbs(first_error);
  say_second_run_plan(first_error, policy, graphs);
  TimedRun second = run_and_read(program_argv, *directory, 2, policy, graphs);
  blockrun::SecondRun outcome = blockrun::compare_runs(first_error, second.finding);
  if (pinned(outcome)) {
    say_pinned(first_error, second.finding, outcome, 2, policy);
    return first.status;
  }
  if (outcome != blockrun::SecondRun::NotPinned) {
    say_unconfirmed(first_error, second.finding, outcome, 2, policy, second.status);
    return first.status;
  }
  say_not_pinned(second.finding, 2, policy);
  if (max_runs < 3) {
    say("localize: --max-runs 2: no third run, which would block every launch alone and settle it; keeping "
        "run 1's finding.");
    say_first_finding(first_error);
    return first.status;
  }
  say(std::string("localize: run 3: --block '") + blockrun::kThirdRunPolicy +
      "' (every launch waits for all before it and runs alone: slow, and it settles it)");
  TimedRun third = run_and_read(program_argv, *directory, 3, blockrun::kThirdRunPolicy, graphs);
  blockrun::SecondRun settled = blockrun::compare_runs(first_error, third.finding);
  if (pinned(settled)) {
    say_pinned(first_error, third.finding, settled, 3, blockrun::kThirdRunPolicy);
    return first.status;
  }
  say_unconfirmed(first_error, third.finding, settled, 3, blockrun::kThirdRunPolicy, third.status);
  return first.status;
}

}  // namespace blockrun::cli
// SPDX-License-Identifier: MIT
