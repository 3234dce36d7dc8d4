// Merging the reports of a job's processes (job_report.h).
#include "job_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <set>

#include "localize.h"
#include "pieces/pin_advice.h"
#include "report/report_file.h"
#include "report/keys.h"

namespace blockrun {

namespace {

// The launch a first error points at: its pinned launch, else its first (oldest) suspect; or nullptr.
const Json* pointed_launch(const Json& first_error) {
  if (const Json* launch = object_member(first_error, key::launch)) return launch;
  const Json* suspects = array_member(first_error, key::suspects);
  if (suspects && !suspects->empty() && suspects->front().is_object()) return &suspects->front();
  return nullptr;
}

// "2026-11-30 00:31:02.123456 UTC"
std::string wall_time(double seconds) {
  double whole = std::floor(seconds);
  time_t t = static_cast<time_t>(whole);
  std::tm utc{};
  gmtime_r(&t, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &utc);
  int micros = static_cast<int>(std::lround((seconds - whole) * 1e6));
  if (micros > 999999) micros = 999999;
  return fmt::format("{}.{:06d} UTC", text, micros);
}

const char* kind_name(ProcessOutcome::Kind kind) {
  switch (kind) {
    case ProcessOutcome::Kind::CudaError:
      return "cuda_error";
    case ProcessOutcome::Kind::Collective:
      return "collective_error";
    case ProcessOutcome::Kind::Fault:
      return "fault";
    case ProcessOutcome::Kind::Killed:
      return "killed";
    case ProcessOutcome::Kind::CutShort:
      return "cut_short";
    case ProcessOutcome::Kind::Clean:
      return "clean";
  }
  return "?";
}

// Failures of the process's own first, then collective errors, then signals sent to it.
int tier(ProcessOutcome::Kind kind) {
  switch (kind) {
    case ProcessOutcome::Kind::CudaError:
    case ProcessOutcome::Kind::Fault:
      return 0;
    case ProcessOutcome::Kind::Collective:
      return 1;
    case ProcessOutcome::Kind::Killed:
      return 2;
    default:
      return 3;
  }
}

// What the breadcrumbs said was still running when a fatal signal came: an NCCL collective first (a rank
// stuck in it), else the oldest unfinished launch; "" without breadcrumbs or with nothing unfinished. A
// launch only not known to have completed (no breadcrumb write of its own: `unfinished` false) is said as
// such. Records from before `unfinished` was written count as unfinished (each stream's first launch only).
std::string in_flight_text(const Json& fatal_signal) {
  const Json* in_flight = array_member(fatal_signal, key::in_flight);
  if (!in_flight || in_flight->empty()) return "";
  auto unfinished = [](const Json& launch) {
    const Json* known = member(launch, key::unfinished);
    return !known || !known->is_boolean() || known->get<bool>();
  };
  for (const Json& launch : *in_flight) {
    std::string collective = string_member(launch, key::collective);
    if (collective.empty()) continue;
    return unfinished(launch) ? fmt::format("; stuck in NCCL {} (launch #{} had not completed)", collective,
                                            whole_member(launch, key::seq))
                              : fmt::format("; maybe in NCCL {} (launch #{} not known to have completed)",
                                            collective, whole_member(launch, key::seq));
  }
  const Json& oldest = in_flight->front();
  return fmt::format("; {}: kernel {}, launch #{}",
                     unfinished(oldest) ? "not completed" : "not known to have completed",
                     string_member(oldest, key::kernel, "?"), whole_member(oldest, key::seq));
}

// One line: what became of a process.
std::string outcome_text(const ProcessOutcome& process) {
  switch (process.kind()) {
    case ProcessOutcome::Kind::CudaError:
    case ProcessOutcome::Kind::Collective: {
      const Json& error = *process.first_error;
      std::string text = fmt::format("{} returned by {}", string_member(error, key::error),
                                     string_member(error, key::surfaced_api));
      const Json* launch = pointed_launch(error);
      if (!launch) return text;
      std::string kernel = string_member(*launch, key::kernel, string_member(*launch, key::api, "a launch"));
      std::string collective = string_member(*launch, key::collective);
      std::string what = fmt::format("kernel {}{}, launch #{}", kernel,
                                     collective.empty() ? "" : " (NCCL " + collective + ")",
                                     whole_member(*launch, key::seq));
      if (is_exact(error)) return text + ", in " + what;
      const Json* suspects = array_member(error, key::suspects);
      size_t count = suspects ? suspects->size() : 1;
      return text + fmt::format(", culprit among {} unfinished launch{} (oldest: {})", count,
                                count == 1 ? "" : "es", what);
    }
    case ProcessOutcome::Kind::Fault:
      return fmt::format("fatal signal {} (a fault in the program), no CUDA error seen{}",
                         string_member(*process.fatal_signal, key::signal),
                         in_flight_text(*process.fatal_signal));
    case ProcessOutcome::Kind::Killed:
      return fmt::format(
          "fatal signal {} sent to it (a watchdog's abort(), the launcher, a kill), no CUDA error seen{}",
          string_member(*process.fatal_signal, key::signal), in_flight_text(*process.fatal_signal));
    case ProcessOutcome::Kind::CutShort:
      // Only what is known (issue 40, N2): every end the shim sees (exit, a fatal signal) writes a record.
      return "no end record: the process ended without the shim writing its end (killed by SIGKILL or the "
             "out-of-memory killer, an exit that skipped the shim's exit code) or is still running; how it "
             "ended is unknown";
    case ProcessOutcome::Kind::Clean:
      return fmt::format("exited without a CUDA error ({} launches)",
                         process.summary ? whole_member(*process.summary, key::launches) : "?");
  }
  return "";
}

// A record read back, written out again. Every number is written as a double, as the job record has
// always written them (an integer past 2^53 as 1.2e+19).
void write_value(JsonWriter& json, const Json& value) {
  if (value.is_object()) {
    json.begin_object();
    for (auto item = value.begin(); item != value.end(); ++item) {
      json.key(item.key());
      write_value(json, item.value());
    }
    json.end_object();
  } else if (value.is_array()) {
    json.begin_array();
    for (const Json& item : value) write_value(json, item);
    json.end_array();
  } else if (value.is_string()) {
    json.value(value.get_ref<const std::string&>());
  } else if (value.is_boolean()) {
    json.value(value.get<bool>());
  } else if (value.is_number()) {
    json.value(value.get<double>());
  } else {
    json.null();
  }
}

// The processes in the order the verdict gives them: the first failure (by tier, then time), the other
// failures by time, then the processes without a failure by rank.
std::vector<size_t> verdict_order(const std::vector<ProcessOutcome>& processes) {
  std::vector<size_t> order(processes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto by_time = [&](size_t a, size_t b) {
    std::optional<double> fx = processes[a].failed_at(), fy = processes[b].failed_at();
    if (fx.has_value() != fy.has_value()) return fx.has_value();
    if (fx && *fx != *fy) return *fx < *fy;
    return processes[a].rank < processes[b].rank;
  };
  std::stable_sort(order.begin(), order.end(), by_time);
  auto first = std::min_element(order.begin(), order.end(), [&](size_t a, size_t b) {
    int ta = tier(processes[a].kind()), tb = tier(processes[b].kind());
    return ta != tb ? ta < tb : by_time(a, b);
  });
  if (first != order.end()) std::rotate(order.begin(), first, first + 1);
  return order;
}

}  // namespace

ProcessOutcome::Kind ProcessOutcome::kind() const {
  if (first_error) return collective().empty() ? Kind::CudaError : Kind::Collective;
  if (fatal_signal) {
    const Json* sent = member(*fatal_signal, key::sent);
    return sent && sent->is_boolean() && sent->get<bool>() ? Kind::Killed : Kind::Fault;
  }
  if (!summary) return Kind::CutShort;
  return Kind::Clean;
}

std::optional<double> ProcessOutcome::failed_at() const {
  if (first_error) return number_member(*first_error, key::time);
  if (fatal_signal) return number_member(*fatal_signal, key::time);
  return std::nullopt;
}

std::string ProcessOutcome::collective() const {
  if (!first_error) return "";
  const Json* launch = pointed_launch(*first_error);
  return launch ? string_member(*launch, key::collective) : "";
}

std::string ProcessOutcome::who() const {
  if (!started) return fmt::format("the process of {} (no start record)", report);
  return fmt::format("rank {} (pid {} on {}, {})", rank, pid, host, process);
}

namespace {

// Of the processes read from one file (from `first` on), those of its last run: a report path used again by a
// later run must not make the earlier run's failure this run's first (issue 19).
void keep_last_run(size_t first, std::vector<ProcessOutcome>* processes) {
  const std::string last_run = processes->back().run;
  auto earlier =
      std::stable_partition(processes->begin() + static_cast<long>(first), processes->end(),
                            [&](const ProcessOutcome& process) { return process.run == last_run; });
  size_t left_out = static_cast<size_t>(processes->end() - earlier);
  processes->erase(earlier, processes->end());
  for (size_t i = first; i < processes->size(); ++i) (*processes)[i].earlier_runs = left_out;
}

}  // namespace

size_t RecordOwners::start(long pid) {
  if (started_last_) pids_.push_back(pid);  // another process of the same file
  pids_.back() = pid;
  started_last_ = true;
  return pids_.size() - 1;
}

size_t RecordOwners::owner(long pid) const {
  for (size_t i = pids_.size(); pid >= 0 && i-- > 0;) {
    if (pids_[i] == pid) return i;
  }
  return pids_.size() - 1;
}

void JobReader::begin_file(const std::string& path, bool keep_launches) {
  path_ = path;
  keep_launches_ = keep_launches;
  owners_ = RecordOwners();
  first_of_file_ = processes_.size();
  unreadable_ = 0;
  saw_launch_ = false;
  of_file_.assign(1, processes_.size());
  processes_.emplace_back();
  processes_.back().report = path;
  processes_.back().launches_kept = keep_launches;
}

void JobReader::add_line(std::string_view line) {
  // Most of a report written with --log-launches is launch records, which the verdict does not need: each is
  // checked (a cut one counts as unreadable), not built.
  static constexpr std::string_view kLaunch = "{\"type\":\"launch\",";
  if (!keep_launches_ && line.substr(0, kLaunch.size()) == kLaunch) {
    if (!valid_json(line)) ++unreadable_;
    saw_launch_ = true;
    return;
  }
  std::optional<Json> record = parse_json(line);
  if (!record) {
    ++unreadable_;
    return;
  }
  add_record(std::move(*record));
}

void JobReader::add_record(Json&& record) {
  std::string type = string_member(record, key::type);
  if (type == "start") {
    size_t ordinal = owners_.start(static_cast<long>(number_member(record, key::pid)));
    if (ordinal == of_file_.size()) {
      of_file_.push_back(processes_.size());
      processes_.emplace_back();
      processes_.back().report = path_;
      processes_.back().ordinal = ordinal;
      processes_.back().launches_kept = keep_launches_;
    }
    ProcessOutcome& process = processes_.back();
    process.started = true;
    process.host = string_member(record, key::host, "?");
    process.pid = static_cast<long>(number_member(record, key::pid));
    process.rank = static_cast<long>(number_member(record, key::rank));
    process.process = string_member(record, key::process, "?");
    process.run = string_member(record, key::run);
    process.started_at = number_member(record, key::time);
    process.argv.clear();
    if (const Json* argv = array_member(record, key::argv)) {
      for (const Json& argument : *argv)
        if (argument.is_string()) process.argv.push_back(argument.get<std::string>());
    }
    return;
  }
  ProcessOutcome& process =
      processes_[of_file_[owners_.owner(static_cast<long>(number_member(record, key::pid, -1)))]];
  if (type == "launch") {
    saw_launch_ = true;
    if (keep_launches_) process.launches.push_back(std::move(record));
    return;
  }
  if (type == "first_error" && !process.first_error) {
    process.first_error = std::move(record);
  } else if (type == "fatal_signal" && !process.fatal_signal) {
    process.fatal_signal = std::move(record);
  } else if (type == "summary") {
    process.summary = std::move(record);
  }
}

bool JobReader::end_file() {
  const ProcessOutcome& first = processes_[first_of_file_];
  if (processes_.size() - first_of_file_ == 1 && !first.started && !first.first_error &&
      !first.fatal_signal && !first.summary && !saw_launch_) {
    processes_.pop_back();
    return false;
  }
  processes_.back().unreadable += unreadable_;  // a cut-short record is the last process's, at the end
  keep_last_run(first_of_file_, &processes_);
  if (processes_.size() - first_of_file_ > 1) {
    for (size_t i = first_of_file_; i < processes_.size(); ++i) processes_[i].shared_file = true;
  }
  return true;
}

bool for_each_launch(const ProcessOutcome& process, const std::function<void(const Json&)>& visit,
                     std::string* error) {
  if (process.launches_kept) {
    for (const Json& record : process.launches) visit(record);
    return true;
  }
  // The file again, its records given to their processes as the verdict's reading gave them.
  RecordOwners owners;
  return for_each_line_in_file(
      process.report,
      [&](std::string_view line) {
        std::optional<Json> record = parse_json(line);
        if (!record) return;
        std::string type = string_member(*record, key::type);
        if (type == "start") {
          owners.start(static_cast<long>(number_member(*record, key::pid)));
        } else if (type == "launch" &&
                   owners.owner(static_cast<long>(number_member(*record, key::pid, -1))) == process.ordinal) {
          visit(*record);
        }
      },
      error);
}

std::vector<ProcessOutcome> read_job(const std::vector<std::pair<std::string, std::string>>& reports,
                                     bool keep_launches) {
  JobReader reader;
  for (const auto& [path, contents] : reports) {
    reader.begin_file(path, keep_launches);
    for_each_line(contents, [&](std::string_view line) { reader.add_line(line); });
    (void)reader.end_file();
  }
  return reader.take();
}

int first_failure(const std::vector<ProcessOutcome>& processes) {
  std::vector<size_t> order = verdict_order(processes);
  if (order.empty() || !processes[order.front()].failed_at()) return -1;
  return static_cast<int>(order.front());
}

JobOutcome job_outcome(const std::vector<ProcessOutcome>& processes) {
  if (first_failure(processes) >= 0) return JobOutcome::Failed;
  for (const ProcessOutcome& process : processes)
    if (process.kind() == ProcessOutcome::Kind::CutShort) return JobOutcome::CutShort;
  return JobOutcome::Clean;
}

namespace {

// The hosts of the processes whose start record was read.
std::set<std::string> started_hosts(const std::vector<ProcessOutcome>& processes) {
  std::set<std::string> hosts;
  for (const ProcessOutcome& process : processes)
    if (process.started) hosts.insert(process.host);
  return hosts;
}

// The verdict's first lines: how many processes and files, on which hosts; a note where processes shared a
// file.
void add_overview(const std::vector<ProcessOutcome>& processes, std::vector<std::string>* lines) {
  std::set<std::string> hosts = started_hosts(processes), files;
  for (const ProcessOutcome& process : processes) files.insert(process.report);
  lines->push_back(fmt::format("{} process{} ({} report file{}) on {}", processes.size(),
                               processes.size() == 1 ? "" : "es", files.size(), files.size() == 1 ? "" : "s",
                               hosts.empty() ? "unknown hosts" : fmt::format("{}", fmt::join(hosts, ", "))));
  std::set<std::string> noted;
  for (const ProcessOutcome& process : processes) {
    if (process.earlier_runs && noted.insert(process.report).second) {
      lines->push_back(
          fmt::format("note: {} also holds {} process{} of earlier runs, left out (the report path "
                      "was used again)",
                      process.report, process.earlier_runs, process.earlier_runs == 1 ? "" : "es"));
    }
  }
  for (const ProcessOutcome& process : processes) {
    if (process.shared_file) {
      lines->push_back(
          fmt::format("note: several processes wrote {}; give each its own file with %p or %r in the "
                      "report path (their records may be mixed up)",
                      process.report));
      break;
    }
  }
}

// A first error pinned to its launch: the culprit, and how it was found.
void add_pinned_error(const Json& error, std::vector<std::string>* lines) {
  for (const std::string& line : describe_culprit(error)) lines->push_back("  " + line);
  std::string method = string_member(error, key::method);
  lines->push_back(method == "breadcrumbs"
                       ? "  found by breadcrumbs: the first launch on its stream that did not "
                         "complete; the error surfaced at a later call"
                   : method == "blocking" ? "  found by blocking: the launch's own synchronize failed"
                                          : "  " + string_member(error, key::how));
}

// A first error not pinned to a launch: the suspects, and how to pin the culprit among them.
void add_unpinned_error(const Json& error, std::vector<std::string>* lines) {
  lines->push_back(fmt::format("  error: {} ({}), returned by {}", string_member(error, key::error),
                               string_member(error, key::message), string_member(error, key::surfaced_api)));
  lines->push_back("  the culprit is among the launches not known to have completed, oldest first:");
  for (const std::string& line : describe_suspects(error)) lines->push_back("    " + line);
}

// A first error of the environment (no usable driver or device, issue 42): no launch is at fault; the problem
// and its fix, as the process's log said them.
void add_environment_error(const Json& error, std::vector<std::string>* lines) {
  lines->push_back(fmt::format("  error: {} ({}), returned by {}", string_member(error, key::error),
                               string_member(error, key::message), string_member(error, key::surfaced_api)));
  if (const Json* environment = object_member(error, key::environment)) {
    lines->push_back("  not a kernel's fault: " + string_member(*environment, key::problem));
    lines->push_back("  to fix it: " + string_member(*environment, key::fix));
  }
}

// The process that failed first: who, when, and what it did.
void add_first_failure(const ProcessOutcome& culprit, std::vector<std::string>* lines) {
  lines->push_back(fmt::format("first to fail: {}, at {}", culprit.who(), wall_time(*culprit.failed_at())));
  if (!culprit.first_error) {
    lines->push_back("  " + outcome_text(culprit));
  } else if (is_environment_error(*culprit.first_error)) {
    add_environment_error(*culprit.first_error, lines);
  } else if (is_exact(*culprit.first_error)) {
    add_pinned_error(*culprit.first_error, lines);
  } else {
    add_unpinned_error(*culprit.first_error, lines);
  }
}

// Every process but the first to fail, in the verdict's order: those that failed (with their time after the
// first's), then those that did not.
void add_others(const std::vector<ProcessOutcome>& processes, int first, std::vector<std::string>* lines) {
  bool after_header = false, quiet_header = false;
  for (size_t index : verdict_order(processes)) {
    if (static_cast<int>(index) == first) continue;
    const ProcessOutcome& process = processes[index];
    std::optional<double> when = process.failed_at();
    if (when) {
      if (!after_header) lines->push_back(first >= 0 ? "after it:" : "failed:");
      after_header = true;
      double first_time = *processes[static_cast<size_t>(first)].failed_at();
      lines->push_back(
          fmt::format("  {}: {:+.3f} s: {}", process.who(), *when - first_time, outcome_text(process)));
    } else {
      if (!quiet_header) lines->push_back("without a failure of their own:");
      quiet_header = true;
      lines->push_back(fmt::format("  {}: {}", process.who(), outcome_text(process)));
    }
  }
}

// A number, or null where there is none.
void write_number_or_null(JsonWriter& json, std::optional<double> number) {
  if (number) {
    json.value(*number);
  } else {
    json.null();
  }
}

// A record read back, or null where there is none.
void write_record_or_null(JsonWriter& json, const std::optional<Json>& record) {
  if (record) {
    write_value(json, *record);
  } else {
    json.null();
  }
}

// One process of the verdict's order. `first_time`: when the first to fail failed, if one did.
void write_process(JsonWriter& json, const ProcessOutcome& process, size_t index,
                   std::optional<double> first_time) {
  json.begin_object()
      .field("index", static_cast<uint64_t>(index))
      .field("report", process.report)
      .field("started", process.started)
      .field("host", process.host)
      .field("pid", static_cast<int64_t>(process.pid))
      .field("rank", static_cast<int64_t>(process.rank))
      .field("process", process.process)
      .field("outcome", kind_name(process.kind()))
      .field("description", outcome_text(process));
  std::optional<double> when = process.failed_at();
  json.key("time");
  write_number_or_null(json, when);
  json.key("after_first_s");
  write_number_or_null(json, when && first_time ? std::optional<double>(*when - *first_time) : std::nullopt);
  std::string collective = process.collective();
  json.key("collective").value(collective.empty() ? nullptr : collective.c_str());
  json.key("first_error");
  write_record_or_null(json, process.first_error);
  json.key("fatal_signal");
  write_record_or_null(json, process.fatal_signal);
  json.field("unreadable_lines", static_cast<uint64_t>(process.unreadable));
  json.end_object();
}

}  // namespace

namespace {

// Whether `process` is a rank of a job (its pin command then acts in its rank alone) rather than a process
// alone.
bool is_job(const std::vector<ProcessOutcome>& processes, const ProcessOutcome& process) {
  return processes.size() > 1 || process.rank != 0;
}

}  // namespace

std::string pin_command(const ProcessOutcome& process, bool in_job) {
  if (!process.first_error || !needs_second_run(*process.first_error)) return "";
  const Json& error = *process.first_error;
  std::string localize = string_member(error, key::localize_command);
  if (!in_job && !localize.empty()) return localize;
  // The report's pin rule blocks the culprit found by breadcrumbs, or every suspect where it covers them all;
  // else every launch of that rank (NCCL's excepted, docs/distributed.md).
  std::string rule = string_member(error, key::pin_rule);
  const Json* covers = member(error, key::pin_rule_covers);
  bool rule_pins =
      !rule.empty() && (is_exact(error) || (covers && covers->is_boolean() && covers->get<bool>()));
  std::string block = shell_quoted(rule_pins ? rule : "all");
  if (in_job) return fmt::format("--ranks {} --block {}", process.rank, block);
  std::string program;
  for (const std::string& argument : process.argv) program += " " + shell_quoted(argument);
  return "cuda-blockrun --localize --" + (program.empty() ? std::string(" PROGRAM [ARGS...]") : program);
}

std::vector<std::string> describe_job(const std::vector<ProcessOutcome>& processes) {
  std::vector<std::string> lines;
  add_overview(processes, &lines);
  int first = first_failure(processes);
  if (first < 0) {
    lines.push_back("no process failed");
  } else {
    add_first_failure(processes[static_cast<size_t>(first)], &lines);
  }
  add_others(processes, first, &lines);
  // Last, the next step (issue 42): the command that pins the culprit in the rank that failed first.
  if (first >= 0) {
    const ProcessOutcome& culprit = processes[static_cast<size_t>(first)];
    bool in_job = is_job(processes, culprit);
    std::string command = pin_command(culprit, in_job);
    if (!command.empty() && in_job)
      lines.push_back(fmt::format(
          "to pin it: run the job again with {} added to cuda-blockrun's options, which act in rank {} alone "
          "(docs/distributed.md, \"Localizing one rank of a job\")",
          command, culprit.rank));
    else if (!command.empty())
      lines.push_back("to pin it: " + command);
  }
  return lines;
}

std::string job_json(const std::vector<ProcessOutcome>& processes) {
  int first = first_failure(processes);
  std::optional<double> first_time =
      first >= 0 ? processes[static_cast<size_t>(first)].failed_at() : std::optional<double>();
  JsonWriter json;
  json.begin_object().field("type", "job").field("processes", static_cast<uint64_t>(processes.size()));
  json.key("hosts").begin_array();
  for (const std::string& host : started_hosts(processes)) json.value(host);
  json.end_array();
  json.key("first_failure");
  if (first >= 0) {
    json.value(static_cast<int64_t>(first));
  } else {
    json.null();
  }
  json.key("pin_command");
  std::string command = first >= 0 ? pin_command(processes[static_cast<size_t>(first)],
                                                 is_job(processes, processes[static_cast<size_t>(first)]))
                                   : "";
  if (command.empty()) {
    json.null();
  } else {
    json.value(command);
  }
  json.key("order").begin_array();
  for (size_t index : verdict_order(processes)) write_process(json, processes[index], index, first_time);
  json.end_array();
  json.end_object();
  return json.text();
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT
