// Merging the reports of a job's processes (job_report.h).
#include "job_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <set>

#include "localize.h"
#include "report.h"

namespace blockrun {

namespace {

// The launch a first error points at: its pinned launch, else its first (oldest) suspect; or nullptr.
const JsonValue* pointed_launch(const JsonValue& first_error) {
  if (const JsonValue* launch = first_error.object_member("launch")) return launch;
  const JsonValue* suspects = first_error.array_member("suspects");
  if (suspects && !suspects->array.empty() && suspects->array.front().type == JsonValue::Type::Object)
    return &suspects->array.front();
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
// stuck in it), else the oldest unfinished launch; "" without breadcrumbs or with nothing unfinished.
std::string in_flight_text(const JsonValue& fatal_signal) {
  const JsonValue* in_flight = fatal_signal.array_member("in_flight");
  if (!in_flight || in_flight->array.empty()) return "";
  for (const JsonValue& launch : in_flight->array) {
    std::string collective = launch.text("collective");
    if (!collective.empty())
      return fmt::format("; stuck in NCCL {} (launch #{} had not completed)", collective,
                         launch.whole("seq"));
  }
  const JsonValue& oldest = in_flight->array.front();
  return fmt::format("; not completed: kernel {}, launch #{}", oldest.text("kernel", "?"),
                     oldest.whole("seq"));
}

// One line: what became of a process.
std::string outcome_text(const ProcessOutcome& process) {
  switch (process.kind()) {
    case ProcessOutcome::Kind::CudaError:
    case ProcessOutcome::Kind::Collective: {
      const JsonValue& error = *process.first_error;
      std::string text = fmt::format("{} returned by {}", error.text("error"), error.text("surfaced_api"));
      const JsonValue* launch = pointed_launch(error);
      if (!launch) return text;
      std::string kernel = launch->text("kernel", launch->text("api", "a launch"));
      std::string collective = launch->text("collective");
      std::string what =
          fmt::format("kernel {}{}, launch #{}", kernel,
                      collective.empty() ? "" : " (NCCL " + collective + ")", launch->whole("seq"));
      if (is_exact(error)) return text + ", in " + what;
      const JsonValue* suspects = error.array_member("suspects");
      size_t count = suspects ? suspects->array.size() : 1;
      return text + fmt::format(", culprit among {} unfinished launch{} (oldest: {})", count,
                                count == 1 ? "" : "es", what);
    }
    case ProcessOutcome::Kind::Fault:
      return fmt::format("fatal signal {} (a fault in the program), no CUDA error seen{}",
                         process.fatal_signal->text("signal"), in_flight_text(*process.fatal_signal));
    case ProcessOutcome::Kind::Killed:
      return fmt::format(
          "fatal signal {} sent to it (a watchdog's abort(), the launcher, a kill), no CUDA error seen{}",
          process.fatal_signal->text("signal"), in_flight_text(*process.fatal_signal));
    case ProcessOutcome::Kind::CutShort:
      return "its report ends without a summary: killed outright (SIGKILL, out of memory) or still running";
    case ProcessOutcome::Kind::Clean:
      return fmt::format("exited without a CUDA error ({} launches)",
                         process.summary ? process.summary->whole("launches") : "?");
  }
  return "";
}

void write_value(JsonWriter& json, const JsonValue& value) {
  switch (value.type) {
    case JsonValue::Type::Null:
      json.null();
      break;
    case JsonValue::Type::Bool:
      json.value(value.boolean);
      break;
    case JsonValue::Type::Number:
      json.value(value.number);
      break;
    case JsonValue::Type::String:
      json.value(value.string);
      break;
    case JsonValue::Type::Array:
      json.begin_array();
      for (const JsonValue& item : value.array) write_value(json, item);
      json.end_array();
      break;
    case JsonValue::Type::Object:
      json.begin_object();
      for (const auto& [key, item] : value.object) {
        json.key(key);
        write_value(json, item);
      }
      json.end_object();
      break;
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
  if (fatal_signal)
    return fatal_signal->get("sent") && fatal_signal->get("sent")->boolean ? Kind::Killed : Kind::Fault;
  if (!summary) return Kind::CutShort;
  return Kind::Clean;
}

std::optional<double> ProcessOutcome::failed_at() const {
  if (first_error) return first_error->num("time");
  if (fatal_signal) return fatal_signal->num("time");
  return std::nullopt;
}

std::string ProcessOutcome::collective() const {
  if (!first_error) return "";
  const JsonValue* launch = pointed_launch(*first_error);
  return launch ? launch->text("collective") : "";
}

std::string ProcessOutcome::who() const {
  if (!started) return fmt::format("the process of {} (no start record)", report);
  return fmt::format("rank {} (pid {} on {}, {})", rank, pid, host, process);
}

std::vector<ProcessOutcome> read_job(const std::vector<std::pair<std::string, std::string>>& reports) {
  std::vector<ProcessOutcome> processes;
  for (const auto& [path, contents] : reports) {
    size_t first_of_file = processes.size();
    processes.emplace_back();
    processes.back().report = path;
    size_t unreadable = for_each_json_line(contents, [&, &path = path](JsonValue&& record) {
      std::string type = record.text("type");
      if (type == "start") {
        if (processes.back().started) {  // another process of the same file
          processes.emplace_back();
          processes.back().report = path;
        }
        ProcessOutcome& process = processes.back();
        process.started = true;
        process.host = record.text("host", "?");
        process.pid = static_cast<long>(record.num("pid"));
        process.rank = static_cast<long>(record.num("rank"));
        process.process = record.text("process", "?");
        return;
      }
      ProcessOutcome& process = processes.back();
      if (type == "first_error" && !process.first_error) {
        process.first_error = std::move(record);
      } else if (type == "fatal_signal" && !process.fatal_signal) {
        process.fatal_signal = std::move(record);
      } else if (type == "summary") {
        process.summary = std::move(record);
      }
    });
    processes.back().unreadable += unreadable;  // a cut-short record is the last process's, at the end
    if (processes.size() - first_of_file > 1) {
      for (size_t i = first_of_file; i < processes.size(); ++i) processes[i].shared_file = true;
    }
  }
  return processes;
}

int first_failure(const std::vector<ProcessOutcome>& processes) {
  std::vector<size_t> order = verdict_order(processes);
  if (order.empty() || !processes[order.front()].failed_at()) return -1;
  return static_cast<int>(order.front());
}

std::vector<std::string> describe_job(const std::vector<ProcessOutcome>& processes) {
  std::vector<std::string> lines;
  std::set<std::string> hosts, files;
  for (const ProcessOutcome& process : processes) {
    if (process.started) hosts.insert(process.host);
    files.insert(process.report);
  }
  lines.push_back(fmt::format("{} process{} ({} report file{}) on {}", processes.size(),
                              processes.size() == 1 ? "" : "es", files.size(), files.size() == 1 ? "" : "s",
                              hosts.empty() ? "unknown hosts" : fmt::format("{}", fmt::join(hosts, ", "))));
  for (const ProcessOutcome& process : processes) {
    if (process.shared_file) {
      lines.push_back(
          fmt::format("note: several processes wrote {}; give each its own file with %p or %r in the "
                      "report path (their records may be mixed up)",
                      process.report));
      break;
    }
  }
  int first = first_failure(processes);
  if (first < 0) {
    lines.push_back("no process failed");
  } else {
    const ProcessOutcome& culprit = processes[static_cast<size_t>(first)];
    lines.push_back(fmt::format("first to fail: {}, at {}", culprit.who(), wall_time(*culprit.failed_at())));
    if (culprit.first_error) {
      const JsonValue& error = *culprit.first_error;
      if (is_exact(error)) {
        for (const std::string& line : describe_culprit(error)) lines.push_back("  " + line);
        std::string method = error.text("method");
        lines.push_back(method == "breadcrumbs"
                            ? "  found by breadcrumbs: the first launch on its stream that did not "
                              "complete; the error surfaced at a later call"
                        : method == "blocking" ? "  found by blocking: the launch's own synchronize failed"
                                               : "  " + error.text("how"));
      } else {
        lines.push_back(fmt::format("  error: {} ({}), returned by {}", error.text("error"),
                                    error.text("message"), error.text("surfaced_api")));
        lines.push_back("  the culprit is among the launches not known to have completed, oldest first:");
        for (const std::string& line : describe_suspects(error)) lines.push_back("    " + line);
        std::string rule = error.text("pin_rule");
        if (!rule.empty())
          lines.push_back(fmt::format("  to pin it: run rank {} again with --ranks {} --block '{}'",
                                      culprit.rank, culprit.rank, rule));
      }
    } else {
      lines.push_back("  " + outcome_text(culprit));
    }
  }
  std::vector<size_t> order = verdict_order(processes);
  bool after_header = false, quiet_header = false;
  for (size_t index : order) {
    if (static_cast<int>(index) == first) continue;
    const ProcessOutcome& process = processes[index];
    std::optional<double> when = process.failed_at();
    if (when) {
      if (!after_header) lines.push_back(first >= 0 ? "after it:" : "failed:");
      after_header = true;
      double first_time = *processes[static_cast<size_t>(first)].failed_at();
      lines.push_back(
          fmt::format("  {}: {:+.3f} s: {}", process.who(), *when - first_time, outcome_text(process)));
    } else {
      if (!quiet_header) lines.push_back("without a failure of their own:");
      quiet_header = true;
      lines.push_back(fmt::format("  {}: {}", process.who(), outcome_text(process)));
    }
  }
  return lines;
}

std::string job_json(const std::vector<ProcessOutcome>& processes) {
  int first = first_failure(processes);
  std::optional<double> first_time =
      first >= 0 ? processes[static_cast<size_t>(first)].failed_at() : std::optional<double>();
  std::set<std::string> hosts;
  for (const ProcessOutcome& process : processes)
    if (process.started) hosts.insert(process.host);
  JsonWriter json;
  json.begin_object().field("type", "job").field("processes", static_cast<uint64_t>(processes.size()));
  json.key("hosts").begin_array();
  for (const std::string& host : hosts) json.value(host);
  json.end_array();
  json.key("first_failure");
  if (first >= 0) {
    json.value(static_cast<int64_t>(first));
  } else {
    json.null();
  }
  json.key("order").begin_array();
  for (size_t index : verdict_order(processes)) {
    const ProcessOutcome& process = processes[index];
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
    if (when) {
      json.value(*when);
    } else {
      json.null();
    }
    json.key("after_first_s");
    if (when && first_time) {
      json.value(*when - *first_time);
    } else {
      json.null();
    }
    std::string collective = process.collective();
    json.key("collective").value(collective.empty() ? nullptr : collective.c_str());
    json.key("first_error");
    if (process.first_error) {
      write_value(json, *process.first_error);
    } else {
      json.null();
    }
    json.key("fatal_signal");
    if (process.fatal_signal) {
      write_value(json, *process.fatal_signal);
    } else {
      json.null();
    }
    json.field("unreadable_lines", static_cast<uint64_t>(process.unreadable));
    json.end_object();
  }
  json.end_array();
  json.end_object();
  return json.text();
}

}  // namespace blockrun
