// `cuda-blockrun --localize`: reading a run's reports (localize.h).
#include "localize.h"

#include <fmt/format.h>

#include <set>

namespace blockrun {

namespace {

const JsonValue* launch_of(const JsonValue& first_error) {
  return first_error.object_member("launch");
}

// The kernels a first error points at: its launch's and its suspects' (short names, as a policy uses them;
// the call's name for a library call or graph blocked as a unit).
std::set<std::string> suspected_kernels(const JsonValue& first_error) {
  std::set<std::string> kernels;
  auto add = [&](const JsonValue& launch) {
    std::string name = launch.text("kernel_base", launch.text("api"));
    if (!name.empty()) kernels.insert(name);
  };
  if (const JsonValue* launch = launch_of(first_error)) add(*launch);
  if (const JsonValue* suspects = first_error.array_member("suspects")) {
    for (const JsonValue& suspect : suspects->array) add(suspect);
  }
  return kernels;
}

// A graph launch's capture record (launch.graph.capture), or null: not a graph, or its capture not seen.
const JsonValue* graph_capture_of(const JsonValue& launch) {
  const JsonValue* graph = launch.object_member("graph");
  return graph ? graph->object_member("capture") : nullptr;
}

bool failed_node_is_exact(const JsonValue& capture) {
  const JsonValue* node = capture.object_member("failed_node");
  return node && node->text("certainty") == "exact";
}

std::string describe_launch(const JsonValue& launch) {
  std::string what = launch.text("kernel");
  if (what.empty()) what = launch.text("api", "a launch");
  bool graph = launch.object_member("graph") != nullptr;
  std::string line =
      fmt::format("{} {}, launch #{}", graph ? "graph launch" : "kernel", what, launch.whole("seq"));
  if (launch.num("kernel_launch") > 0) line += fmt::format(" (its launch {})", launch.whole("kernel_launch"));
  // A kernel a library call launched: the call with its shape, which is what the program's line asked for.
  if (const JsonValue* library = launch.object_member("library"); library && !launch.text("kernel").empty()) {
    line += ", launched by " + library->text("api", "a library call");
    if (library->get("m"))
      line += fmt::format(" m={} n={} k={} transa={} transb={}", library->whole("m"), library->whole("n"),
                          library->whole("k"), library->text("transa"), library->text("transb"));
    if (library->num("batch") > 0) line += " batch=" + library->whole("batch");
  }
  std::string stream = launch.text("stream");
  if (!stream.empty()) line += ", stream " + stream;
  return line;
}

std::string describe_frame(const JsonValue& frame) {
  std::string function = frame.text("function", "?");
  std::string file = frame.text("file");
  if (!file.empty()) return fmt::format("{}:{} in {}", file, frame.whole("line"), function);
  return fmt::format("{} ({}+{})", function, frame.text("module", "?"), frame.text("offset", "?"));
}

}  // namespace

RunFinding find_first_error(const std::vector<std::pair<std::string, std::string>>& reports) {
  RunFinding finding;
  for (const auto& [path, contents] : reports) {
    ++finding.reports;
    finding.unreadable += for_each_json_line(contents, [&, &path = path](JsonValue&& record) {
      if (record.text("type") != "first_error") return;
      if (!finding.found || record.num("time") < finding.first_error.num("time")) {
        finding.found = true;
        finding.first_error = std::move(record);
        finding.report = path;
      }
    });
  }
  return finding;
}

bool is_exact(const JsonValue& first_error) {
  return first_error.text("certainty") == "exact" && launch_of(first_error) != nullptr;
}

bool needs_second_run(const JsonValue& first_error) {
  if (!is_exact(first_error)) return true;
  const JsonValue& launch = *launch_of(first_error);
  // A graph replay whose failed node is not known: run 2 puts breadcrumbs into the graph and blocks its
  // replays (second_run_wants_graph_breadcrumbs).
  if (const JsonValue* capture = graph_capture_of(launch); capture && !failed_node_is_exact(*capture))
    return true;
  if (first_error.text("method") != "breadcrumbs" || launch.text("stack") == "full") return false;
  // Found by breadcrumbs: the record kept the caller of the CUDA entry point and, in a Python program, the
  // Python line. A second run is for what is missing: a caller that is not the program's own code (no
  // file:line: the static runtime's, a library's without debug information) in a program without Python,
  // or a Python line that was not kept.
  const JsonValue* callsite = launch.object_member("callsite");
  bool caller_known = callsite && !callsite->text("file").empty();
  if (has_python_line(first_error)) return false;
  std::string python_status = launch.text("python_status");
  bool no_python = python_status == "no python" || python_status == "no python thread state";
  return !(no_python && caller_known);
}

bool has_python_line(const JsonValue& first_error) {
  const JsonValue* launch = launch_of(first_error);
  return launch && launch->object_member("python_callsite");
}

bool second_run_wants_graph_breadcrumbs(const JsonValue& first_error) {
  if (const JsonValue* launch = launch_of(first_error); launch && launch->object_member("graph")) return true;
  if (const JsonValue* suspects = first_error.array_member("suspects")) {
    for (const JsonValue& suspect : suspects->array)
      if (suspect.object_member("graph")) return true;
  }
  return false;
}

std::string second_run_policy(const JsonValue& first_error) {
  std::string rule = first_error.text("pin_rule");
  return rule.empty() ? "all" : rule;
}

SecondRun compare_runs(const JsonValue& first, const RunFinding& second) {
  if (!second.found) return SecondRun::NoFault;
  if (!is_exact(second.first_error)) return SecondRun::NotPinned;
  const JsonValue& launch = *launch_of(second.first_error);
  std::string kernel = launch.text("kernel_base", launch.text("api"));
  std::set<std::string> suspected = suspected_kernels(first);
  // By number: the runtime and the driver name the same error differently (cudaErrorIllegalAddress,
  // CUDA_ERROR_ILLEGAL_ADDRESS), and the second run may see it through the other.
  bool same_error = second.first_error.num("code") == first.num("code");
  return same_error && suspected.count(kernel) ? SecondRun::Pinned : SecondRun::Diverged;
}

std::vector<std::string> describe_culprit(const JsonValue& first_error) {
  std::vector<std::string> lines;
  const JsonValue* launch = launch_of(first_error);
  if (launch) lines.push_back(describe_launch(*launch));
  lines.push_back(fmt::format("error: {} ({}), returned by {}", first_error.text("error"),
                              first_error.text("message"), first_error.text("surfaced_api")));
  if (!launch) return lines;
  if (const JsonValue* callsite = launch->object_member("callsite")) {
    lines.push_back("launched at " + describe_frame(*callsite));
  } else {
    lines.push_back("launched at: unknown (no call site was captured)");
  }
  if (const JsonValue* python = launch->object_member("python_callsite")) {
    lines.push_back(fmt::format("python: {}:{} in {}", python->text("file"), python->whole("line"),
                                python->text("function", "?")));
  }
  if (const JsonValue* capture = graph_capture_of(*launch)) {
    // Where a capture line is: the C++ call site, the Python line, or both.
    auto where = [&](const JsonValue& site) {
      std::string text;
      if (const JsonValue* frame = site.object_member("callsite")) text = describe_frame(*frame);
      if (const JsonValue* line = site.object_member("python_callsite"))
        text +=
            fmt::format("{}python {}:{}", text.empty() ? "" : ", ", line->text("file"), line->whole("line"));
      return text.empty() ? std::string("an unknown place") : text;
    };
    const JsonValue* begun = capture->object_member("begun_at");
    lines.push_back(
        fmt::format("graph: replay {} of the graph {} at {}", launch->object_member("graph")->whole("replay"),
                    capture->text("how", "captured"), begun ? where(*begun) : "an unknown place"));
    const JsonValue* node = capture->object_member("failed_node");
    const JsonValue* positions = node ? node->array_member("positions") : nullptr;
    const JsonValue* captured = capture->array_member("captured");
    if (positions && captured) {
      for (const JsonValue& position : positions->array) {
        size_t index = static_cast<size_t>(position.number) - 1;
        if (index >= captured->array.size()) continue;
        const JsonValue& launched = captured->array[index];
        lines.push_back(fmt::format("{} {} of {}: kernel {}, captured at {}",
                                    failed_node_is_exact(*capture) ? "node" : "candidate node", index + 1,
                                    capture->whole("launches"), launched.text("kernel", "?"),
                                    where(launched)));
      }
    }
  }
  return lines;
}

std::vector<std::string> describe_suspects(const JsonValue& first_error) {
  std::vector<std::string> lines;
  const JsonValue* suspects = first_error.array_member("suspects");
  if (!suspects) return lines;
  for (const JsonValue& suspect : suspects->array) lines.push_back(describe_launch(suspect));
  return lines;
}

}  // namespace blockrun
