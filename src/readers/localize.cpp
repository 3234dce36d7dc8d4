// `cuda-blockrun --localize`: reading a run's reports (localize.h).
#include "localize.h"

#include <fmt/format.h>

#include <set>

namespace blockrun {

namespace {

const Json* launch_of(const Json& first_error) {
  return object_member(first_error, "launch");
}

// The kernels a first error points at: its launch's and its suspects' (short names, as a policy uses them;
// the call's name for a library call or graph blocked as a unit).
std::set<std::string> suspected_kernels(const Json& first_error) {
  std::set<std::string> kernels;
  auto add = [&](const Json& launch) {
    std::string name = string_member(launch, "kernel_base", string_member(launch, "api"));
    if (!name.empty()) kernels.insert(name);
  };
  if (const Json* launch = launch_of(first_error)) add(*launch);
  if (const Json* suspects = array_member(first_error, "suspects")) {
    for (const Json& suspect : *suspects) add(suspect);
  }
  return kernels;
}

// A graph launch's capture record (launch.graph.capture), or null: not a graph, or its capture not seen.
const Json* graph_capture_of(const Json& launch) {
  const Json* graph = object_member(launch, "graph");
  return graph ? object_member(*graph, "capture") : nullptr;
}

bool failed_node_is_exact(const Json& capture) {
  const Json* node = object_member(capture, "failed_node");
  return node && string_member(*node, "certainty") == "exact";
}

std::string describe_launch(const Json& launch) {
  std::string what = string_member(launch, "kernel");
  if (what.empty()) what = string_member(launch, "api", "a launch");
  bool graph = object_member(launch, "graph") != nullptr;
  std::string line =
      fmt::format("{} {}, launch #{}", graph ? "graph launch" : "kernel", what, whole_member(launch, "seq"));
  if (number_member(launch, "kernel_launch") > 0)
    line += fmt::format(" (its launch {})", whole_member(launch, "kernel_launch"));
  // A kernel a library call launched: the call with its shape, which is what the program's line asked for.
  if (const Json* library = object_member(launch, "library");
      library && !string_member(launch, "kernel").empty()) {
    line += ", launched by " + string_member(*library, "api", "a library call");
    if (member(*library, "m"))
      line += fmt::format(" m={} n={} k={} transa={} transb={}", whole_member(*library, "m"),
                          whole_member(*library, "n"), whole_member(*library, "k"),
                          string_member(*library, "transa"), string_member(*library, "transb"));
    if (number_member(*library, "batch") > 0) line += " batch=" + whole_member(*library, "batch");
  }
  std::string stream = string_member(launch, "stream");
  if (!stream.empty()) line += ", stream " + stream;
  return line;
}

std::string describe_frame(const Json& frame) {
  std::string function = string_member(frame, "function", "?");
  std::string file = string_member(frame, "file");
  if (!file.empty()) return fmt::format("{}:{} in {}", file, whole_member(frame, "line"), function);
  return fmt::format("{} ({}+{})", function, string_member(frame, "module", "?"),
                     string_member(frame, "offset", "?"));
}

}  // namespace

RunFinding find_first_error(const std::vector<std::pair<std::string, std::string>>& reports) {
  RunFinding finding;
  for (const auto& [path, contents] : reports) {
    ++finding.reports;
    finding.unreadable += for_each_json_line(contents, [&, &path = path](Json&& record) {
      if (string_member(record, "type") != "first_error") return;
      if (!finding.found || number_member(record, "time") < number_member(finding.first_error, "time")) {
        finding.found = true;
        finding.first_error = std::move(record);
        finding.report = path;
      }
    });
  }
  return finding;
}

bool is_exact(const Json& first_error) {
  return string_member(first_error, "certainty") == "exact" && launch_of(first_error) != nullptr;
}

bool needs_second_run(const Json& first_error) {
  if (!is_exact(first_error)) return true;
  const Json& launch = *launch_of(first_error);
  // A graph replay whose failed node is not known: run 2 puts breadcrumbs into the graph and blocks its
  // replays (second_run_wants_graph_breadcrumbs).
  if (const Json* capture = graph_capture_of(launch); capture && !failed_node_is_exact(*capture)) return true;
  if (string_member(first_error, "method") != "breadcrumbs" || string_member(launch, "stack") == "full")
    return false;
  // Found by breadcrumbs: the record kept the caller of the CUDA entry point and, in a Python program, the
  // Python line. A second run is for what is missing: a caller that is not the program's own code (no
  // file:line: the static runtime's, a library's without debug information) in a program without Python,
  // or a Python line that was not kept.
  const Json* callsite = object_member(launch, "callsite");
  bool caller_known = callsite && !string_member(*callsite, "file").empty();
  if (has_python_line(first_error)) return false;
  std::string python_status = string_member(launch, "python_status");
  bool no_python = python_status == "no python" || python_status == "no python thread state";
  return !(no_python && caller_known);
}

bool has_python_line(const Json& first_error) {
  const Json* launch = launch_of(first_error);
  return launch && object_member(*launch, "python_callsite");
}

bool second_run_wants_graph_breadcrumbs(const Json& first_error) {
  if (const Json* launch = launch_of(first_error); launch && object_member(*launch, "graph")) return true;
  if (const Json* suspects = array_member(first_error, "suspects")) {
    for (const Json& suspect : *suspects)
      if (object_member(suspect, "graph")) return true;
  }
  return false;
}

std::string second_run_policy(const Json& first_error) {
  std::string rule = string_member(first_error, "pin_rule");
  return rule.empty() ? "all" : rule;
}

SecondRun compare_runs(const Json& first, const RunFinding& second) {
  if (!second.found) return SecondRun::NoFault;
  if (!is_exact(second.first_error)) return SecondRun::NotPinned;
  const Json& launch = *launch_of(second.first_error);
  std::string kernel = string_member(launch, "kernel_base", string_member(launch, "api"));
  std::set<std::string> suspected = suspected_kernels(first);
  // By number: the runtime and the driver name the same error differently (cudaErrorIllegalAddress,
  // CUDA_ERROR_ILLEGAL_ADDRESS), and the second run may see it through the other.
  bool same_error = number_member(second.first_error, "code") == number_member(first, "code");
  return same_error && suspected.count(kernel) ? SecondRun::Pinned : SecondRun::Diverged;
}

std::vector<std::string> describe_culprit(const Json& first_error) {
  std::vector<std::string> lines;
  const Json* launch = launch_of(first_error);
  if (launch) lines.push_back(describe_launch(*launch));
  lines.push_back(fmt::format("error: {} ({}), returned by {}", string_member(first_error, "error"),
                              string_member(first_error, "message"),
                              string_member(first_error, "surfaced_api")));
  if (!launch) return lines;
  if (const Json* callsite = object_member(*launch, "callsite")) {
    lines.push_back("launched at " + describe_frame(*callsite));
  } else {
    lines.push_back("launched at: unknown (no call site was captured)");
  }
  if (const Json* python = object_member(*launch, "python_callsite")) {
    lines.push_back(fmt::format("python: {}:{} in {}", string_member(*python, "file"),
                                whole_member(*python, "line"), string_member(*python, "function", "?")));
  }
  if (const Json* capture = graph_capture_of(*launch)) {
    // Where a capture line is: the C++ call site, the Python line, or both.
    auto where = [&](const Json& site) {
      std::string text;
      if (const Json* frame = object_member(site, "callsite")) text = describe_frame(*frame);
      if (const Json* line = object_member(site, "python_callsite"))
        text += fmt::format("{}python {}:{}", text.empty() ? "" : ", ", string_member(*line, "file"),
                            whole_member(*line, "line"));
      return text.empty() ? std::string("an unknown place") : text;
    };
    const Json* begun = object_member(*capture, "begun_at");
    lines.push_back(fmt::format(
        "graph: replay {} of the graph {} at {}", whole_member(*object_member(*launch, "graph"), "replay"),
        string_member(*capture, "how", "captured"), begun ? where(*begun) : "an unknown place"));
    const Json* node = object_member(*capture, "failed_node");
    const Json* positions = node ? array_member(*node, "positions") : nullptr;
    const Json* captured = array_member(*capture, "captured");
    if (positions && captured) {
      for (const Json& position : *positions) {
        size_t index = static_cast<size_t>(number_or(position)) - 1;
        if (index >= captured->size()) continue;
        const Json& launched = (*captured)[index];
        lines.push_back(fmt::format("{} {} of {}: kernel {}, captured at {}",
                                    failed_node_is_exact(*capture) ? "node" : "candidate node", index + 1,
                                    whole_member(*capture, "launches"),
                                    string_member(launched, "kernel", "?"), where(launched)));
      }
    }
  }
  return lines;
}

std::vector<std::string> describe_suspects(const Json& first_error) {
  std::vector<std::string> lines;
  const Json* suspects = array_member(first_error, "suspects");
  if (!suspects) return lines;
  for (const Json& suspect : *suspects) lines.push_back(describe_launch(suspect));
  return lines;
}

}  // namespace blockrun
