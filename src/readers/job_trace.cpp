// A job's reports as one timeline (job_trace.h): each record read back into the values the trace writer
// takes (trace/trace_writer.h), the same ones the shim's tracer fills from its rings.
#include "job_trace.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "report/keys.h"
#include "trace/trace_writer.h"

namespace blockrun {

namespace {

using trace::CallSlice;
using trace::configuration_text;
using trace::graph_text;
using trace::library_call_text;
using trace::python_text;
using trace::SliceText;

constexpr size_t kWriteBytes = 1 << 20;  // a write(2) per MiB of trace

// A `[x, y, z]` member as a Dim3 (1s where missing).
Dim3 dim3_member(const Json& value, std::string_view key) {
  Dim3 dim;
  const Json* array = array_member(value, key);
  if (!array || array->size() != 3) return dim;
  dim.x = static_cast<uint32_t>(number_or((*array)[0], 1));
  dim.y = static_cast<uint32_t>(number_or((*array)[1], 1));
  dim.z = static_cast<uint32_t>(number_or((*array)[2], 1));
  return dim;
}

uint64_t unsigned_member(const Json& value, std::string_view key) {
  double number = number_member(value, key);
  return number > 0 ? static_cast<uint64_t>(number) : 0;
}

// One process of the trace: where its times count from, its tracks, and what its first error decided.
class ProcessTrace {
 public:
  ProcessTrace(const ProcessOutcome& process, uint64_t pid, double origin)
      : process_(process), pid_(pid), offset_ns_(std::llround((process.started_at - origin) * 1e9)) {
    if (process.first_error) read_first_error(*process.first_error);
  }

  // A time of the process's records, on the trace's clock: `nanoseconds` since its start record where the
  // record gives it (a number), else the record's wall `time`.
  uint64_t at(const Json& record, std::string_view nanoseconds) const {
    const Json* value = member(record, nanoseconds);
    if (value && value->is_number()) return clamp(offset_ns_ + static_cast<int64_t>(number_or(*value)));
    double time = number_member(record, key::time, process_.started_at);
    return clamp(offset_ns_ + std::llround((time - process_.started_at) * 1e9));
  }

  void write(trace::TraceWriter& out, JobTrace& result) {
    std::string title = "rank " + std::to_string(process_.rank) + ": " + process_.process + " (pid " +
                        std::to_string(process_.pid) + " on " + process_.host + ")";
    out.process_name(pid_, title.c_str(), process_.rank);
    // The records one at a time, as they are read: each thread's track named where its first launch is.
    size_t launches = 0;
    std::string problem;
    bool read = for_each_launch(
        process_,
        [&](const Json& record) {
          const Json* launch = object_member(record, key::launch);
          if (!launch) return;
          name_thread(out, unsigned_member(*launch, key::thread));
          write_launch(out, record, *launch);
          ++launches;
        },
        &problem);
    if (!read) {
      if (!result.not_read_again++) result.problem = process_.report + ": " + problem;
    }
    result.launches += launches;
    if (!launches) ++result.without_launches;
    if (verdicts_.has_error) {
      name_thread(out, verdicts_.mark.tid);
      out.error(verdicts_.mark);
    }
    if (const std::optional<Json>& signal = process_.fatal_signal) {
      std::string name = "fatal signal " + string_member(*signal, key::signal, "?");
      out.instant(pid_, threads_.empty() ? 1 : *threads_.begin(), at(*signal, ""), "signal", name.c_str(),
                  nullptr);
    }
  }

 private:
  void name_thread(trace::TraceWriter& out, uint64_t thread) {
    if (!threads_.insert(thread).second) return;
    std::string name = "host thread " + std::to_string(thread);
    out.thread_name(pid_, thread, name.c_str(), static_cast<int64_t>(thread));
  }

  static uint64_t clamp(int64_t nanoseconds) {
    return nanoseconds > 0 ? static_cast<uint64_t>(nanoseconds) : 0;
  }

  void read_first_error(const Json& error) {
    verdicts_.has_error = true;
    const Json* culprit = object_member(error, key::launch);
    const Json* refused = object_member(error, key::surfaced_at_launch);
    std::string method = string_member(error, key::method);
    verdicts_.culprit = culprit ? unsigned_member(*culprit, key::seq) : 0;
    verdicts_.exact = string_member(error, key::certainty) == "exact";
    verdicts_.refused = refused ? unsigned_member(*refused, key::seq) : 0;
    if (const Json* suspects = array_member(error, key::suspects))
      for (const Json& suspect : *suspects) others_.push_back(unsigned_member(suspect, key::seq));
    verdicts_.others = others_.data();
    verdicts_.other_count = others_.size();
    verdicts_.others_are_candidates = method == "breadcrumbs";

    texts_.error = string_member(error, key::error);
    texts_.api = string_member(error, key::surfaced_api);
    texts_.how = string_member(error, key::how);
    texts_.certainty = string_member(error, key::certainty);
    texts_.method = method;
    if (culprit) {
      std::string base = string_member(*culprit, key::kernel_base);
      uint64_t ordinal = unsigned_member(*culprit, key::kernel_launch);
      texts_.culprit =
          (!base.empty() && ordinal ? base + "#" + std::to_string(ordinal) + ", " : std::string()) +
          "launch #" + std::to_string(verdicts_.culprit);
    }
    trace::ErrorMark& mark = verdicts_.mark;
    mark.pid = pid_;
    uint64_t thread = unsigned_member(error, key::thread);
    mark.tid = thread ? thread : culprit ? unsigned_member(*culprit, key::thread) : 1;
    const Json* began = member(error, key::surfaced_began_ns);
    mark.began_ns = began && began->is_number() ? at(error, key::surfaced_began_ns) : 0;
    mark.returned_ns = at(error, key::surfaced_ns);
    // The launch that returned it is a slice of the trace where its record was read.
    surfaced_at_ = verdicts_.refused                            ? verdicts_.refused
                   : method == "launch" || method == "blocking" ? verdicts_.culprit
                                                                : 0;
    mark.call_has_slice = false;  // until that launch's record is read (write_launch)
    mark.error = texts_.error.c_str();
    mark.api = texts_.api.c_str();
    mark.how = texts_.how.empty() ? nullptr : texts_.how.c_str();
    mark.certainty = texts_.certainty.c_str();
    mark.method = texts_.method.c_str();
    mark.culprit = texts_.culprit.empty() ? nullptr : texts_.culprit.c_str();
  }

  uint64_t stream_track(trace::TraceWriter& out, const std::string& stream) {
    auto [found, added] = stream_tracks_.emplace(stream, trace::kStreamTrackBase + stream_tracks_.size());
    if (added) {
      std::string name = "stream " + stream + " (GPU time of blocked launches)";
      out.thread_name(pid_, found->second, name.c_str(), static_cast<int64_t>(found->second));
    }
    return found->second;
  }

  void write_launch(trace::TraceWriter& out, const Json& record, const Json& launch) {
    CallSlice slice;
    slice.pid = pid_;
    slice.tid = unsigned_member(launch, key::thread);
    slice.began_ns = at(record, key::began_ns);
    slice.ended_ns = std::max(slice.began_ns, at(record, key::ended_ns));
    const Json* wait = member(record, key::wait_began_ns);
    slice.wait_began_ns = wait && wait->is_number() ? at(record, key::wait_began_ns) : 0;
    slice.seq = unsigned_member(launch, key::seq);
    if (surfaced_at_ && slice.seq == surfaced_at_) verdicts_.mark.call_has_slice = true;
    std::string api = string_member(launch, key::api), driver_api = string_member(launch, key::driver_api);
    std::string stream = string_member(launch, key::stream, "?");
    std::string outcome = string_member(record, key::outcome), result = string_member(record, key::result);
    std::string kernel = string_member(launch, key::kernel), base = string_member(launch, key::kernel_base);
    slice.api = api.empty() ? nullptr : api.c_str();
    slice.driver_api = driver_api.empty() ? nullptr : driver_api.c_str();
    slice.stream = stream.c_str();
    slice.outcome = outcome.c_str();
    slice.result = result.empty() ? nullptr : result.c_str();
    slice.blocked = outcome.rfind("blocked", 0) == 0;
    SliceText configuration, library, graph, python;
    std::string library_api;
    if (const Json* call = object_member(launch, key::library_call)) {
      library_api = string_member(*call, key::api);
      LibraryCall facts;
      facts.m = static_cast<int64_t>(number_member(*call, key::m));
      facts.n = static_cast<int64_t>(number_member(*call, key::n));
      facts.k = static_cast<int64_t>(number_member(*call, key::k));
      facts.batch = static_cast<int64_t>(number_member(*call, key::batch));
      std::string transa = string_member(*call, key::transa), transb = string_member(*call, key::transb);
      facts.transa = transa.empty() ? 0 : transa[0];
      facts.transb = transb.empty() ? 0 : transb[0];
      library_call_text(library, library_api.c_str(), facts);
      slice.library_call = library.c_str();
    }
    if (!kernel.empty()) {
      slice.name = kernel.c_str();
      slice.kernel_base = base.c_str();
      slice.kernel_launch = unsigned_member(launch, key::kernel_launch);
      configuration_text(configuration, dim3_member(launch, key::grid), dim3_member(launch, key::block),
                         unsigned_member(launch, key::shared_memory), stream.c_str());
      slice.configuration = configuration.c_str();
    } else if (const Json* graph_launch = object_member(launch, key::graph)) {
      slice.category = "graph replay";
      slice.name = "graph replay";
      std::string exec = string_member(*graph_launch, key::exec, "?");
      graph_text(graph, exec.c_str(), unsigned_member(*graph_launch, key::replay),
                 unsigned_member(*graph_launch, key::nodes));
      slice.graph = graph.c_str();
    } else {
      slice.category = "library call";
      slice.name = library_api.empty() ? "library call" : library_api.c_str();
    }
    if (const Json* line = object_member(launch, key::python_callsite)) {
      std::string file = string_member(*line, key::file), function = string_member(*line, key::function);
      python_text(python, file.c_str(), static_cast<int>(number_member(*line, key::line)), function.c_str());
      slice.python = python.c_str();
    }
    const Json* gpu = member(record, key::gpu_ns);
    if (gpu && gpu->is_number()) {
      slice.gpu_ns = static_cast<int64_t>(number_or(*gpu));
      slice.stream_tid = stream_track(out, stream);
    }
    out.launch(slice, verdicts_);
  }

  const ProcessOutcome& process_;
  const uint64_t pid_;
  const int64_t offset_ns_;
  uint64_t surfaced_at_ = 0;    // the launch that returned the first error, where one did (0: none)
  std::set<uint64_t> threads_;  // the host threads whose tracks are named
  trace::Verdicts verdicts_;
  std::vector<uint64_t> others_;
  struct {
    std::string error, api, how, certainty, method, culprit;
  } texts_;  // the first error's, which the mark points into
  std::map<std::string, uint64_t> stream_tracks_;
};

}  // namespace

JobTrace write_job_trace(const std::vector<ProcessOutcome>& processes, OutputFile& file) {
  JobTrace result;
  std::vector<const ProcessOutcome*> started;
  for (const ProcessOutcome& process : processes)
    if (process.started) started.push_back(&process);
  std::stable_sort(started.begin(), started.end(), [](const ProcessOutcome* a, const ProcessOutcome* b) {
    return a->rank != b->rank ? a->rank < b->rank : a->started_at < b->started_at;
  });
  double origin = started.empty() ? 0 : started.front()->started_at;
  for (const ProcessOutcome* process : started) origin = std::min(origin, process->started_at);

  std::vector<char> buffer(trace::TraceWriter::kEventBytes + kWriteBytes);
  file.truncate();
  trace::TraceWriter out(&file, buffer.data(), buffer.size());
  out.begin("cuda-blockrun report --trace", static_cast<uint64_t>(std::llround(origin * 1e6)), 0, 0);
  std::set<uint64_t> pids;
  for (const ProcessOutcome* process : started) {
    // Two hosts can give two processes one pid: the trace's must differ.
    uint64_t pid = static_cast<uint64_t>(process->pid);
    while (!pids.insert(pid).second) pid += 10'000'000;
    ProcessTrace(*process, pid, origin).write(out, result);
    ++result.processes;
  }
  result.written = out.end();
  return result;
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT
