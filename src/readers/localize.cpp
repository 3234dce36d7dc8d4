// `cuda-blockrun --localize`: reading a run's reports (localize.h).
#include "localize.h"

#include <fmt/format.h>

#include <optional>
#include <set>

#include "cuda/cuda_errors.h"
#include "config/policy.h"
#include "report/keys.h"
#include "report/launch_writer.h"

namespace blockrun {

namespace {

const Json* launch_of(const Json& first_error) {
  return object_member(first_error, key::launch);
}

// The kernels a first error points at: its launch's and its suspects' (short names, as a policy uses them;
// the call's name for a library call or graph blocked as a unit).
std::set<std::string> suspected_kernels(const Json& first_error) {
  std::set<std::string> kernels;
  auto add = [&](const Json& launch) {
    std::string name = string_member(launch, key::kernel_base, string_member(launch, key::api));
    if (!name.empty()) kernels.insert(name);
  };
  if (const Json* launch = launch_of(first_error)) add(*launch);
  if (const Json* suspects = array_member(first_error, key::suspects)) {
    for (const Json& suspect : *suspects) add(suspect);
  }
  return kernels;
}

// A report's error code (a JSON number) that is a kernel's load or store on a bad address
// (src/cuda/cuda_errors.def).
bool reports_bad_memory_access(double code) {
  return code >= 0 && code < 1e6 && code == static_cast<int>(code) &&
         is_bad_memory_access(static_cast<int>(code));
}

// A graph launch's capture record (launch.graph.capture), or null: not a graph, or its capture not seen.
const Json* graph_capture_of(const Json& launch) {
  const Json* graph = object_member(launch, key::graph);
  return graph ? object_member(*graph, key::capture) : nullptr;
}

bool failed_node_is_exact(const Json& capture) {
  const Json* node = object_member(capture, key::failed_node);
  return node && string_member(*node, key::certainty) == "exact";
}

// A launch's `grid` or `block` ([x, y, z]), or nullopt where the record has none.
std::optional<Dim3> dim3_member(const Json& launch, const char* name) {
  const Json* value = array_member(launch, name);
  if (!value || value->size() != 3) return std::nullopt;
  return Dim3{static_cast<uint32_t>(number_or((*value)[0])), static_cast<uint32_t>(number_or((*value)[1])),
              static_cast<uint32_t>(number_or((*value)[2]))};
}

// A kernel a library call launched: the call with its shape, which is what the program's line asked for.
std::string launched_by(const Json& launch) {
  const Json* library = object_member(launch, key::library_call);
  if (!library) return "";
  std::string text = ", launched by " + string_member(*library, key::api, "a library call");
  if (member(*library, key::m))
    text += fmt::format(" m={} n={} k={} transa={} transb={}", whole_member(*library, key::m),
                        whole_member(*library, key::n), whole_member(*library, key::k),
                        string_member(*library, key::transa), string_member(*library, key::transb));
  if (number_member(*library, key::batch) > 0) text += " batch=" + whole_member(*library, key::batch);
  return text;
}

// As the log tells a launch (describe, launch_writer.h): a kernel with its configuration (where the record
// has it) and NAME#N; a graph or a library call with its stream.
std::string describe_launch(const Json& launch) {
  std::string kernel = string_member(launch, key::kernel);
  std::string stream = string_member(launch, key::stream, "?");
  if (kernel.empty()) {
    bool graph = object_member(launch, key::graph) != nullptr;
    return fmt::format("{} {}, launch #{}, stream {}", graph ? "graph launch" : "kernel",
                       string_member(launch, key::api, "a launch"), whole_member(launch, key::seq), stream);
  }
  std::optional<Dim3> grid = dim3_member(launch, key::grid), block = dim3_member(launch, key::block);
  std::string configuration =
      grid && block
          ? launch_configuration(*grid, *block,
                                 static_cast<uint64_t>(number_member(launch, key::shared_memory)), stream)
          : std::string();
  std::string line = fmt::format("kernel {}{}{}, launch #{}", kernel, configuration, launched_by(launch),
                                 whole_member(launch, key::seq));
  if (number_member(launch, key::kernel_launch) > 0)
    line += " (" +
            kernel_launch_text(string_member(launch, key::kernel_base, kernel),
                               static_cast<uint64_t>(number_member(launch, key::kernel_launch))) +
            ")";
  return configuration.empty() ? line + ", stream " + stream : line;
}

std::string describe_frame(const Json& frame) {
  std::string function = string_member(frame, key::function, "?");
  std::string file = string_member(frame, key::file);
  if (!file.empty()) return fmt::format("{}:{} in {}", file, whole_member(frame, key::line), function);
  return fmt::format("{} ({}+{})", function, string_member(frame, key::module, "?"),
                     string_member(frame, key::offset, "?"));
}

}  // namespace

namespace {

// One line of the report at `path` into `finding`: a first error earlier than the one kept replaces it.
// Launch records, most of a report written with --log-launches, are checked (a cut one counts as
// unreadable), not built, as JobReader does.
void add_line(RunFinding& finding, const std::string& path, std::string_view line) {
  static constexpr std::string_view kLaunch = "{\"type\":\"launch\",";
  if (line.substr(0, kLaunch.size()) == kLaunch) {
    if (!valid_json(line)) ++finding.unreadable;
    return;
  }
  std::optional<Json> record = parse_json(line);
  if (!record) {
    ++finding.unreadable;
    return;
  }
  if (string_member(*record, key::type) != "first_error") return;
  if (!finding.found || number_member(*record, key::time) < number_member(finding.first_error, key::time)) {
    finding.found = true;
    finding.first_error = std::move(*record);
    finding.report = path;
  }
}

}  // namespace

RunFinding find_first_error(const std::vector<std::pair<std::string, std::string>>& reports) {
  RunFinding finding;
  for (const auto& [path, contents] : reports) {
    ++finding.reports;
    for_each_line(contents, [&, &path = path](std::string_view line) { add_line(finding, path, line); });
  }
  return finding;
}

RunFinding find_first_error_in_files(const std::vector<std::string>& paths) {
  RunFinding finding;
  for (const std::string& path : paths) {
    ++finding.reports;
    for_each_line_in_file(path, [&](std::string_view line) { add_line(finding, path, line); });
  }
  return finding;
}

bool is_exact(const Json& first_error) {
  return string_member(first_error, key::certainty) == "exact" && launch_of(first_error) != nullptr;
}

bool is_environment_error(const Json& first_error) {
  return string_member(first_error, key::meaning) == "environment";
}

bool needs_second_run(const Json& first_error) {
  if (is_environment_error(first_error)) return false;
  if (!is_exact(first_error)) return true;
  const Json& launch = *launch_of(first_error);
  // A graph replay whose failed node is not known: run 2 puts breadcrumbs into the graph and blocks its
  // replays (second_run_wants_graph_breadcrumbs).
  if (const Json* capture = graph_capture_of(launch); capture && !failed_node_is_exact(*capture)) return true;
  if (string_member(first_error, key::method) != "breadcrumbs" || string_member(launch, key::stack) == "full")
    return false;
  // Found by breadcrumbs: the record kept the caller of the CUDA entry point and, in a Python program, the
  // Python line. A second run is for what is missing: a caller that is not the program's own code (no
  // file:line: the static runtime's, a library's without debug information) in a program without Python,
  // or a Python line that was not kept.
  const Json* callsite = object_member(launch, key::callsite);
  bool caller_known = callsite && !string_member(*callsite, key::file).empty();
  if (has_python_line(first_error)) return false;
  std::string python_status = string_member(launch, key::python_status);
  bool no_python = python_status == "no python" || python_status == "no python thread state";
  return !(no_python && caller_known);
}

bool has_python_line(const Json& first_error) {
  const Json* launch = launch_of(first_error);
  return launch && object_member(*launch, key::python_callsite);
}

bool second_run_wants_graph_breadcrumbs(const Json& first_error) {
  if (const Json* launch = launch_of(first_error); launch && object_member(*launch, key::graph)) return true;
  if (const Json* suspects = array_member(first_error, key::suspects)) {
    for (const Json& suspect : *suspects)
      if (object_member(suspect, key::graph)) return true;
  }
  return false;
}

std::string second_run_policy(const Json& first_error) {
  std::string rule = string_member(first_error, key::pin_rule);
  if (rule.empty()) rule = "all";
  std::string policy;
  for (const std::string& one : split_top_level(rule, ";,"))
    if (!one.empty()) policy += (policy.empty() ? "" : ",") + one + " block-alone";
  return policy;
}

bool at_blocked_launch(const Json& first_error) {
  return string_member(first_error, key::method) == "blocking" && launch_of(first_error) != nullptr;
}

SecondRun compare_runs(const Json& first, const RunFinding& second) {
  if (!second.found) return SecondRun::NoFault;
  if (!is_exact(second.first_error)) return SecondRun::NotPinned;
  const Json& launch = *launch_of(second.first_error);
  std::string kernel = string_member(launch, key::kernel_base, string_member(launch, key::api));
  std::set<std::string> suspected = suspected_kernels(first);
  if (!suspected.count(kernel)) return SecondRun::Diverged;
  // By number: the runtime and the driver name the same error differently (cudaErrorIllegalAddress,
  // CUDA_ERROR_ILLEGAL_ADDRESS), and the second run may see it through the other.
  double first_code = number_member(first, key::code);
  double second_code = number_member(second.first_error, key::code);
  if (first_code == second_code) return SecondRun::Pinned;
  // A bad memory access both times, in a launch run 1 suspected: the same fault, coded differently.
  return reports_bad_memory_access(first_code) && reports_bad_memory_access(second_code)
             ? SecondRun::PinnedRecoded
             : SecondRun::Diverged;
}

std::vector<std::string> describe_culprit(const Json& first_error) {
  std::vector<std::string> lines;
  const Json* launch = launch_of(first_error);
  if (launch) lines.push_back(describe_launch(*launch));
  lines.push_back(fmt::format("error: {} ({}), returned by {}", string_member(first_error, key::error),
                              string_member(first_error, key::message),
                              string_member(first_error, key::surfaced_api)));
  if (!launch) return lines;
  if (const Json* callsite = object_member(*launch, key::callsite)) {
    lines.push_back("launched at " + describe_frame(*callsite));
  } else {
    lines.push_back("launched at: unknown (no call site was captured)");
  }
  if (const Json* python = object_member(*launch, key::python_callsite)) {
    lines.push_back(fmt::format("python: {}:{} in {}", string_member(*python, key::file),
                                whole_member(*python, key::line),
                                string_member(*python, key::function, "?")));
  }
  if (const Json* capture = graph_capture_of(*launch)) {
    // Where a capture line is: the C++ call site, the Python line, or both.
    auto where = [&](const Json& site) {
      std::string text;
      if (const Json* frame = object_member(site, key::callsite)) text = describe_frame(*frame);
      if (const Json* line = object_member(site, key::python_callsite))
        text += fmt::format("{}python {}:{}", text.empty() ? "" : ", ", string_member(*line, key::file),
                            whole_member(*line, key::line));
      return text.empty() ? std::string("an unknown place") : text;
    };
    const Json* begun = object_member(*capture, key::begun_at);
    lines.push_back(fmt::format(
        "graph: replay {} of the graph {} at {}", whole_member(*object_member(*launch, key::graph), "replay"),
        string_member(*capture, key::how, "captured"), begun ? where(*begun) : "an unknown place"));
    const Json* node = object_member(*capture, key::failed_node);
    const Json* positions = node ? array_member(*node, key::positions) : nullptr;
    const Json* captured = array_member(*capture, key::captured);
    if (positions && captured) {
      for (const Json& position : *positions) {
        size_t index = static_cast<size_t>(number_or(position)) - 1;
        if (index >= captured->size()) continue;
        const Json& launched = (*captured)[index];
        lines.push_back(fmt::format("{} {} of {}: kernel {}, captured at {}",
                                    failed_node_is_exact(*capture) ? "node" : "candidate node", index + 1,
                                    whole_member(*capture, key::launches),
                                    string_member(launched, key::kernel, "?"), where(launched)));
      }
    }
  }
  return lines;
}

std::vector<std::string> describe_suspects(const Json& first_error) {
  std::vector<std::string> lines;
  const Json* suspects = array_member(first_error, key::suspects);
  if (!suspects) return lines;
  for (const Json& suspect : *suspects) lines.push_back(describe_launch(suspect));
  return lines;
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT
