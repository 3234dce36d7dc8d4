// The exported wrappers, generated from hooks.def, and the one handler per kind of hook they call.
// Every wrapper has the same shape: find the real function, let the engine see the call, call the
// real function exactly once, let the engine see the result, return it unchanged unless the policy
// blocked the launch and the synchronize failed (then that error, as CUDA_LAUNCH_BLOCKING=1 does).
//
// One launch crosses several layers (runtime -> driver, cuBLAS -> driver); it is recorded once, by the
// driver wrapper, with what the outer layer was doing attached (ThreadContext's layers). The runtime wrapper
// records only when the driver wrapper did not see the launch. Who owns a launch is the engine's rule
// (src/cuda/launch_layers.h).
#include <dlfcn.h>

#include <cstring>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>

#include "blocking.h"
#include "engine.h"
#include "launch_path.h"
#include "launch_gate.h"
#include "breadcrumbs.h"
#include "cuda/launch_layers.h"
#include "facts.h"
#include "kernel_names.h"
#include "python_frames.h"
#include "shim.h"
#include "symbol_table.h"

#ifdef CUDA_BLOCKRUN_BENCH_SWITCH
#include "bench_switch.h"
// A span of a driver launch, timed in the benchmark shim only (bench_switch.h); nothing in the shim users
// load.
#define CUDA_BLOCKRUN_BENCH_SPAN(slot, name) bench::Span bench_span(bench::slot, name, false)
#else
#define CUDA_BLOCKRUN_BENCH_SPAN(slot, name)
#endif

namespace blockrun::shim {

namespace {

ErrorCode code_of(cudaError_t result) {
  return {Layer::Runtime, static_cast<int>(result)};
}
ErrorCode code_of(CUresult result) {
  return {Layer::Driver, static_cast<int>(result)};
}
ErrorCode code_of(cublasStatus_t result) {
  return {Layer::Cublas, static_cast<int>(result)};
}

// Every number of the attribution table (src/cuda/cuda_errors.def) is the CUDA headers' own.
namespace check_error_table {
constexpr int none = -1;
#define CUDA_BLOCKRUN_ERROR(meaning, number, runtime_name, driver_name)                             \
  static_assert(static_cast<int>(runtime_name) == number || static_cast<int>(runtime_name) == none, \
                #runtime_name " is not " #number " in the CUDA headers");                           \
  static_assert(static_cast<int>(driver_name) == number || static_cast<int>(driver_name) == none,   \
                #driver_name " is not " #number " in the CUDA headers");
#define CUDA_BLOCKRUN_CUBLAS_STATUS(meaning, number, name) \
  static_assert(static_cast<int>(name) == number, #name " is not " #number " in the cuBLAS headers");
#include "cuda/cuda_errors.def"
}  // namespace check_error_table

// What a wrapper returns when the real function cannot be found: the library's own
// "not initialized" status, never a call through a null pointer.
template <typename Result>
Result not_initialized();
template <>
cudaError_t not_initialized<cudaError_t>() {
  return cudaErrorInitializationError;
}
template <>
CUresult not_initialized<CUresult>() {
  return CUDA_ERROR_NOT_INITIALIZED;
}
template <>
cublasStatus_t not_initialized<cublasStatus_t>() {
  return CUBLAS_STATUS_NOT_INITIALIZED;
}

template <Hook id>
typename HookTraits<id>::Result missing_real() {
  if (Engine* engine = active_engine()) {
    shim_work([engine] {
      engine->report_shim_problem(std::string("the real ") + HookTraits<id>::name +
                                  " was not found in any loaded library; returning its library's "
                                  "'not initialized' status");
    });
  }
  return not_initialized<typename HookTraits<id>::Result>();
}

// Marks the real call of a runtime or library wrapper: driver-level synchronizes and calls inside it
// belong to the outer call, which reports them.
class OuterCall {
 public:
  OuterCall() { thread_context().outer_depth++; }
  ~OuterCall() { thread_context().outer_depth--; }
};

// A runtime launch in the thread's layers while its real call runs: the driver wrapper it continues into
// records into `launch` and says so (driver_recorded). The outer runtime launch's (a runtime launch made
// inside another's real call) are back when the scope ends.
class RuntimeLaunchScope {
 public:
  RuntimeLaunchScope(ThreadLayers& layers, const char* api, Launch* launch, uintptr_t caller)
      : layers_(layers),
        saved_api_(layers.runtime_api),
        saved_launch_(layers.runtime_launch),
        saved_recorded_(layers.driver_recorded),
        saved_caller_(layers.runtime_caller) {
    layers.runtime_api = api;
    layers.runtime_launch = launch;
    layers.driver_recorded = false;
    layers.runtime_caller = caller;
  }
  ~RuntimeLaunchScope() {
    layers_.runtime_api = saved_api_;
    layers_.runtime_launch = saved_launch_;
    layers_.driver_recorded = saved_recorded_;
    layers_.runtime_caller = saved_caller_;
  }
  RuntimeLaunchScope(const RuntimeLaunchScope&) = delete;
  RuntimeLaunchScope& operator=(const RuntimeLaunchScope&) = delete;

 private:
  ThreadLayers& layers_;
  const char* saved_api_;
  Launch* saved_launch_;
  bool saved_recorded_;
  uintptr_t saved_caller_;
};

static_assert(std::is_trivially_destructible_v<Launch>, "handle_driver_launch never destroys its own Launch");

// Blocks after a launch that succeeded when the policy asks, and lets the engine see the outcome.
// Returns the error to hand to the program instead of `result`, if any.
template <typename Result>
Result finish_launch(Engine& engine, Launch& launch, Result result, Layer layer, const void* stream,
                     bool per_thread) {
  if (code_of(result).ok() && launch.ends_quietly()) return result;
  Result answer = result;
  bool blocked_error = false;  // `answer` is the synchronize's error (release_alone has run)
  shim_work([&] {
    BlockResult blocked;
    if (code_of(result).ok() && launch.block()) {
      if (launch.began_ns) launch.wait_began_ns = steady_now_ns();            // the trace shows the wait
      if (!launch.timing.start_ns) launch.timing.start_ns = steady_now_ns();  // recorded late: the wait only
      blocked = block_stream(layer, static_cast<cudaStream_t>(const_cast<void*>(stream)), per_thread,
                             launch.decision.action == Action::BlockDevice);
      finish_block_timing(&launch.timing,
                          blocked.outcome == BlockOutcome::Synchronized && blocked.result.ok());
    }
    engine.end_launch(launch, code_of(result), blocked.outcome, blocked.result, blocked.api);
    release_alone();  // a launch blocked alone: other threads' launches go on once it ended
    if (blocked.outcome == BlockOutcome::Synchronized && !blocked.result.ok()) {
      answer = static_cast<Result>(blocked.result.code);
      blocked_error = true;
    }
  });
  if (!blocked_error) shim_work([] { release_alone(); });
  return answer;
}

// What the engine needs to know of a kernel launch; names the kernel on first sight of its handle.
// Whether the launch goes into a stream capture (a graph node, not run now), and which: asked only once the
// process has begun a capture, and the capture's id only for launches that go into one.
void note_capture(LaunchRequest* request, CUstream stream) {
  if (!capture_has_begun()) return;  // nothing captures yet (the common case): the stream is not asked
  request->in_capture = is_capturing(stream);
  if (request->in_capture) request->capture_id = capture_id(stream);
}

[[gnu::always_inline]] inline LaunchRequest kernel_request(LaunchPath& path,
                                                           const LaunchParameters& parameters,
                                                           const LaunchOwner& owner,
                                                           const ThreadLayers& layers, bool per_thread) {
  // The kernel first: naming a new one calls out, and the request's fields, all set after it, are then stored
  // once (its defaults are overwritten before anything can read them). The namer takes the handle by value:
  // one that referred to `parameters` would keep them in memory, stored and read back, on every launch.
  const KernelInfo* kernel =
      path.kernel(parameters.handle,
                  [handle = parameters.handle, name_of = parameters.name_of] { return name_of(handle); });
  LaunchRequest request;
  request.kernel = kernel;
  request.stream = parameters.stream;
  request.per_thread_default_stream = per_thread;
  request.grid = parameters.grid;
  request.block = parameters.block;
  request.shared_memory = parameters.shared_memory;
  set_owner(owner, layers, &request);
  note_capture(&request, driver_stream(parameters.stream, per_thread));
  return request;
}

// The end of a runtime launch that has more to do than return: the driver did not record it, it failed, or
// the policy or the trace wants more of it. Out of line, so that the usual launch does not prepare for it
// (the owner too is taken by value: by reference, every launch stored one).
template <Hook id, typename... Args>
[[gnu::noinline]] cudaError_t end_runtime_launch(Engine& engine, Launch& launch, bool recorded,
                                                 LaunchOwner owner, cudaError_t result, Args... args) {
  using Traits = HookTraits<id>;
  LaunchParameters parameters = launch_parameters(args...);
  if (!recorded) {
    shim_work([&] {
      LaunchRequest request = kernel_request(engine.launch_path(), parameters, owner, thread_context().layers,
                                             Traits::per_thread);
      engine.launch_path().begin_launch(request, &launch);
      recorded = true;
    });
  }
  if (!recorded) return result;
  return finish_launch(engine, launch, result, Layer::Runtime, parameters.stream, Traits::per_thread);
}

// Runtime launches: the driver wrapper records the launch when the runtime continues into it (the
// usual case); this wrapper then blocks at the runtime level, so the runtime's own error state is what
// CUDA_LAUNCH_BLOCKING=1 would leave. Where the driver did not see it, the launch is recorded here.
// Inlined into the exported wrapper (as handle_driver_launch and kernel_request are): every launch passes
// here, and a call of its own would pass all the launch's arguments once more.
template <Hook id, typename Function, typename... Args>
[[gnu::always_inline]] inline cudaError_t handle_runtime_launch(Engine& engine, Function real_function,
                                                                Args... args) {
  using Traits = HookTraits<id>;
  ThreadContext& context = thread_context();
  ThreadLayers& layers = context.layers;
  // The driver wrapper fills it when the runtime continues into the driver (the usual case), else this
  // wrapper does; raw storage, made (begin_launch) only by whichever records the launch.
  alignas(Launch) unsigned char launch_storage[sizeof(Launch)];
  Launch& launch = *reinterpret_cast<Launch*>(launch_storage);
  cudaError_t result;
  bool recorded;
  LaunchOwner owner;
  {
    RuntimeLaunchScope scope(layers, Traits::name, &launch, context.entry_caller);
    {
      OuterCall outer;
      result = real_function(args...);
    }
    recorded = layers.driver_recorded;
    // Only a launch the driver did not record has an owner to find (from the layers as they are in the call).
    if (!recorded) owner = runtime_launch_owner(layers);
  }
  if (recorded && result == cudaSuccess && launch.ends_quietly()) return result;
  return end_runtime_launch<id>(engine, launch, recorded, owner, result, args...);
}

// Driver launches: every launch of the process passes here, however the caller found the function.
template <Hook id, typename Function, typename... Args>
[[gnu::always_inline]] inline CUresult handle_driver_launch(Engine& engine, Function real_function,
                                                            Args... args) {
  using Traits = HookTraits<id>;
  LaunchPath& path = engine.launch_path();
  ThreadContext& context = thread_context();
  uintptr_t own_caller = context.entry_caller;
  LaunchParameters parameters = launch_parameters(args...);
  at_first_launch();
  // With breadcrumbs the engine keeps every launch's Python line: in a C++ program the answer is known here,
  // without the engine's call for it (tested under the one test of the flag a launch without them pays).
  bool no_python = false;
  if (path.wants_breadcrumbs()) {
    set_up_breadcrumbs(engine);
    no_python = no_python_yet();
  }
  ThreadLayers& layers = context.layers;
  LaunchOwner owner = driver_launch_owner(layers, Traits::name, own_caller);
  // A runtime launch's record is the runtime wrapper's; a Launch of its own is made only where there is none
  // (raw storage: std::optional would zero all of it, 2.7 KB, on every launch). begin_launch makes it.
  alignas(Launch) unsigned char own_storage[sizeof(Launch)];
  Launch& launch = *static_cast<Launch*>(owner.into_runtime_launch ? static_cast<void*>(layers.runtime_launch)
                                                                   : static_cast<void*>(own_storage));
  bool recorded = false;
  bool blocks = false;  // the policy's answer, read once
  GatePass gate = GatePass::Off;
  bool alone = false;
  shim_work([&] {  // naming a new kernel calls into the driver
    CUDA_BLOCKRUN_BENCH_SPAN(kRecord, "driver launch: the record");
    LaunchRequest request = kernel_request(path, parameters, owner, layers, Traits::per_thread);
    request.no_python = no_python;
    if (owner.in_library_call) layers.library_kernels++;
    // Before its number: a launch blocked alone holds the gate from its wait on the device through its
    // synchronize (launch_gate.h). NCCL's never wait there.
    if (__builtin_expect(launch_gate_enabled(), 0))
      gate = enter_gate(!(request.kernel && request.kernel->nccl));
    path.begin_launch(request, &launch);
    recorded = true;
    blocks = launch.block();
    if (__builtin_expect(gate != GatePass::Off, 0) && launch.decision.action == Action::BlockAlone &&
        !request.in_capture)
      alone = become_alone(engine, gate, launch.record.sequence);
    if (blocks) {
      if (engine.config().gpu_time) {
        start_block_timing(&launch.timing, parameters.stream, Traits::per_thread);
      } else {
        launch.timing.start_ns = steady_now_ns();
      }
    }
  });
  CUresult result;
  {
    CUDA_BLOCKRUN_BENCH_SPAN(kLaunchCall, "driver launch: the real call");
    result = real_function(args...);
  }
  if (__builtin_expect(gate != GatePass::Off, 0) && !alone) leave_gate(gate);
  if (recorded && result == CUDA_SUCCESS && (blocks || path.wants_breadcrumbs())) {
    shim_work([&] {
      if (blocks) end_block_timing(launch.timing, parameters.stream, Traits::per_thread);
      CUDA_BLOCKRUN_BENCH_SPAN(kBreadcrumbNoWrite, "driver launch: the breadcrumb, no write");
      [[maybe_unused]] bool wrote = drop_breadcrumb(path, launch, parameters.stream, Traits::per_thread);
#ifdef CUDA_BLOCKRUN_BENCH_SWITCH
      if (wrote) bench_span.move_to(bench::kBreadcrumbWrite, "driver launch: the breadcrumb, with a write");
#endif
    });
  }
  if (recorded && owner.into_runtime_launch) {
    layers.driver_recorded = true;  // the runtime wrapper blocks and finishes it
    return result;
  }
  if (!recorded) return result;
  return finish_launch(engine, launch, result, Layer::Driver, parameters.stream, Traits::per_thread);
}

template <Hook id, typename Function, typename... Args>
auto handle_sync(Engine& engine, Function real_function, Args... args) {
  using Traits = HookTraits<id>;
  LaunchPath& path = engine.launch_path();
  if (Traits::layer == Layer::Driver && thread_context().outer_depth > 0) return real_function(args...);
  SyncScope scope = sync_scope(args...);
  uint64_t mark = path.begin_sync();
  // An event's record is read before the call: the call waits for at least that one.
  EventPoint awaited = scope.kind == SyncScope::Event ? engine.event_point(scope.event) : EventPoint{};
  CallSpan span;
  span.began_ns = path.call_clock();
  auto result = [&] {
    OuterCall outer;
    return real_function(args...);
  }();
  span.returned_ns = path.call_clock();
  // A synchronize is a slice of the trace; a query (PyTorch's allocator polls events) is not.
  span.own_slice = Traits::kind == Kind::Sync && span.began_ns;
  shim_work([&] {
    ErrorCode code = code_of(result);
    // "Not ready" (600 in both numberings) from a query is an answer, not an error.
    if (Traits::kind == Kind::Query && code.code == cudaErrorNotReady) return;
    if (scope.kind == SyncScope::Stream || scope.kind == SyncScope::Device) {
      engine.end_sync(Traits::name, scope.kind == SyncScope::Device, scope.stream, Traits::per_thread, mark,
                      code, span);
    } else if (code.ok()) {
      engine.event_completed(awaited);
    } else {
      engine.observe_error(Traits::name, code, nullptr, false, span);
    }
  });
  return result;
}

// What an Event row tells the engine once it succeeded (one overload per parameter list). A record into a
// capturing stream is a graph node, not a record, and a capturing stream's wait a graph dependency.
template <bool per_thread>
void note_event(Engine& engine, uint64_t, const EventPoint&, CUevent* created, unsigned int) {
  if (created) engine.forget_event(*created);  // a handle that an earlier, destroyed event had
}
template <bool per_thread>
void note_event(Engine& engine, uint64_t, const EventPoint&, CUevent destroyed) {
  engine.forget_event(destroyed);
}
template <bool per_thread>
void note_event(Engine& engine, uint64_t mark, const EventPoint&, CUevent event, CUstream stream,
                unsigned int = 0) {
  if (is_capturing(driver_stream(stream, per_thread))) {
    engine.forget_event(event);
  } else {
    engine.note_event_record(event, stream, per_thread, mark);
  }
}
template <bool per_thread>
void note_event(Engine& engine, uint64_t, const EventPoint& awaited, CUstream stream, CUevent, unsigned int) {
  if (!is_capturing(driver_stream(stream, per_thread))) engine.note_stream_wait(stream, per_thread, awaited);
}

// The event awaited by a wait row, read before the call (engine.h, event_point); nothing for the others.
inline EventPoint awaited_event(Engine& engine, CUstream, CUevent event, unsigned int) {
  return engine.event_point(event);
}
template <typename... Args>
EventPoint awaited_event(Engine&, Args...) {
  return {};
}

// Event rows: told to the engine also inside a hooked runtime or library call (an event created or destroyed
// there may take or free a handle the program's events had); an error there is that call's to report.
template <Hook id, typename Function, typename... Args>
CUresult handle_event(Engine& engine, Function real_function, Args... args) {
  using Traits = HookTraits<id>;
  LaunchPath& path = engine.launch_path();
  bool inner = thread_context().outer_depth > 0;
  uint64_t mark = path.begin_sync();
  EventPoint awaited = awaited_event(engine, args...);
  CallSpan span;
  span.began_ns = path.call_clock();
  CUresult result;
  {
    OuterCall outer;
    result = real_function(args...);
  }
  span.returned_ns = path.call_clock();
  shim_work([&] {
    if (result == CUDA_SUCCESS) {
      note_event<Traits::per_thread>(engine, mark, awaited, args...);
    } else if (!inner) {
      engine.watch_error(Traits::name, code_of(result), stream_argument(args...), Traits::per_thread, span);
    }
  });
  return result;
}

// Call and Watch rows: the result is observed when it is an error (a Watch row's only when it may be an
// earlier kernel's, surfacing here); a driver call inside a hooked runtime call is the runtime wrapper's to
// report.
template <Hook id, typename Function, typename... Args>
auto handle_call(Engine& engine, Function real_function, Args... args) {
  using Traits = HookTraits<id>;
  LaunchPath& path = engine.launch_path();
  if (Traits::layer == Layer::Driver && thread_context().outer_depth > 0) return real_function(args...);
  CallSpan span;
  span.began_ns = path.call_clock();
  auto result = [&] {
    OuterCall outer;
    return real_function(args...);
  }();
  if (code_of(result).ok()) return result;
  span.returned_ns = path.call_clock();
  shim_work([&] {
    if constexpr (Traits::kind == Kind::Watch) {
      engine.watch_error(Traits::name, code_of(result), stream_argument(args...), Traits::per_thread, span);
    } else {
      engine.observe_error(Traits::name, code_of(result), stream_argument(args...), Traits::per_thread, span);
    }
  });
  return result;
}

// What the engine needs to know of a library call: its arguments and its stream (from the handle where the
// call has no stream argument).
template <typename... Args>
LibraryFacts library_call_facts(Args... args) {
  LibraryFacts facts;
  shim_work([&] {
    facts = library_facts(args...);
    if (!facts.has_stream) {
      if (auto get_stream = helper<Helper::cublasGetStream_v2>()) {
        if (get_stream(facts.handle, &facts.stream) != CUBLAS_STATUS_SUCCESS) facts.stream = nullptr;
      }
    }
  });
  return facts;
}

// A library call recorded as a unit of its own, after it ran: blocked as a whole where the policy says.
// Returns what to hand the program: cuBLAS reports a failed kernel as an execution failure (the CUDA error is
// in the log).
cublasStatus_t record_library_unit(Engine& engine, const ThreadLayers& inside, const LibraryFacts& facts,
                                   cublasStatus_t result, uint64_t began_ns) {
  LaunchRequest request;
  set_owner(library_unit_owner(inside), inside, &request);
  request.stream = facts.stream;
  request.began_ns = began_ns;
  note_capture(&request, driver_stream(facts.stream, false));
  Launch launch;
  engine.launch_path().begin_launch(request, &launch);
  BlockResult blocked;
  if (result == CUBLAS_STATUS_SUCCESS && launch.block()) {
    launch.timing.start_ns = steady_now_ns();  // the call already ran: the wait only
    if (launch.began_ns) launch.wait_began_ns = launch.timing.start_ns;
    blocked = block_stream(Layer::Driver, facts.stream, false, launch.decision.action == Action::BlockDevice);
    finish_block_timing(&launch.timing, false);
  }
  engine.end_launch(launch, code_of(result), blocked.outcome, blocked.result, blocked.api);
  if (blocked.outcome == BlockOutcome::Synchronized && !blocked.result.ok())
    return CUBLAS_STATUS_EXECUTION_FAILED;
  return result;
}

// Library calls (the cuBLAS GEMMs): the kernels they launch are recorded by the driver wrapper with the
// call's name and arguments (and blocked where the policy says). Whether the call is also a unit of its own
// is the engine's rule (library_call_record); otherwise only its error is observed.
template <Hook id, typename Function, typename... Args>
cublasStatus_t handle_library(Engine& engine, Function real_function, Args... args) {
  using Traits = HookTraits<id>;
  LaunchPath& path = engine.launch_path();
  ThreadContext& context = thread_context();
  ThreadLayers& layers = context.layers;
  // A library may implement one entry point through another of its exports (cublasSgemm_v2 ->
  // cublasSgemm_v2_64): the inner call is part of the outer one.
  if (layers.library_depth > 0) return real_function(args...);
  LibraryFacts facts = library_call_facts(args...);
  layers.library_api = Traits::name;
  layers.library = facts.call;
  layers.library_kernels = 0;
  layers.library_caller = context.entry_caller;
  layers.library_depth++;
  CallSpan span;
  span.began_ns = path.call_clock();  // a unit's slice begins with the call
  cublasStatus_t result;
  {
    OuterCall outer;
    result = real_function(args...);
  }
  span.returned_ns = path.call_clock();
  layers.library_depth--;
  uint64_t kernels_seen = layers.library_kernels;

  cublasStatus_t answer = result;
  shim_work([&] {
    if (library_call_record(path.decide_library_unit(Traits::name), kernels_seen) ==
        LibraryCallRecord::Unit) {
      answer = record_library_unit(engine, layers, facts, result, span.began_ns);
      return;
    }
    engine.note_library_call(Traits::name, facts.call, facts.stream, span);
    if (result != CUBLAS_STATUS_SUCCESS)
      engine.observe_error(Traits::name, code_of(result), facts.stream, false, span);
  });
  return answer;
}

template <Hook id, typename Function>
CUresult handle_graph_launch(Engine& engine, Function real_function, CUgraphExec graph, CUstream stream) {
  using Traits = HookTraits<id>;
  LaunchPath& path = engine.launch_path();
  Launch launch;
  bool recorded = false;
  GatePass gate = GatePass::Off;
  bool alone = false;
  prepare_breadcrumbs(engine);
  shim_work([&] {
    LaunchRequest request;
    request.family = LaunchFamily::Graph;
    request.api = Traits::name;
    request.caller = thread_context().entry_caller;
    request.graph = engine.graph(graph);
    request.stream = stream;
    request.per_thread_default_stream = Traits::per_thread;
    note_capture(&request, driver_stream(stream, Traits::per_thread));  // a child graph, inlined
    gate = enter_gate(true);  // as a kernel launch (handle_driver_launch)
    path.begin_launch(request, &launch);
    recorded = true;
    if (gate != GatePass::Off && launch.decision.action == Action::BlockAlone && !request.in_capture)
      alone = become_alone(engine, gate, launch.record.sequence);
    reset_graph_breadcrumbs(path, launch, stream, Traits::per_thread);
  });
  CUresult result = real_function(graph, stream);
  if (gate != GatePass::Off && !alone) leave_gate(gate);
  if (!recorded) return result;
  if (result == CUDA_SUCCESS) shim_work([&] { drop_breadcrumb(path, launch, stream, Traits::per_thread); });
  return finish_launch(engine, launch, result, Layer::Driver, stream, Traits::per_thread);
}

template <Hook id, typename Function>
CUresult handle_graph_instantiate(Engine& engine, Function real_function, CUgraphExec* exec, CUgraph graph,
                                  unsigned long long flags) {
  CUresult result = real_function(exec, graph, flags);
  if (result != CUDA_SUCCESS || !exec || !*exec) return result;
  shim_work([&] {
    size_t nodes = 0;
    if (auto get_nodes = helper<Helper::cuGraphGetNodes>()) {
      if (get_nodes(graph, nullptr, &nodes) != CUDA_SUCCESS) nodes = 0;
    }
    engine.note_graph(*exec, nodes, graph);
  });
  return result;
}

// A stream capture began: the engine keeps the launches that go into it, and where it began.
template <Hook id, typename Function, typename... Rest>
CUresult handle_capture_begin(Engine& engine, Function real_function, CUstream stream, Rest... rest) {
  using Traits = HookTraits<id>;
  CUresult result = real_function(stream, rest...);
  if (result != CUDA_SUCCESS) return result;
  shim_work([&] {
    uint64_t capture = capture_id(driver_stream(stream, Traits::per_thread));
    if (capture) engine.begin_capture(capture, thread_context().entry_caller);
  });
  return result;
}

// A kernel node added to a graph built node by node: kept, with where it was added, as what the graph runs.
template <Hook id, typename Function>
CUresult handle_graph_add_kernel_node(Engine& engine, Function real_function, CUgraphNode* node,
                                      CUgraph graph, const CUgraphNode* dependencies, size_t dependency_count,
                                      const CUDA_KERNEL_NODE_PARAMS* params) {
  CUresult result = real_function(node, graph, dependencies, dependency_count, params);
  if (result != CUDA_SUCCESS || !params) return result;
  shim_work([&] {
    const void* handle = params->func ? static_cast<const void*>(params->func) : params->kern;
    const KernelInfo* kernel = engine.launch_path().kernel(handle, [&] { return name_of_function(handle); });
    engine.note_graph_kernel_node(graph, kernel, thread_context().entry_caller);
  });
  return result;
}

// A stream capture ends: its graph (if one was made) is what its launches were captured into.
template <Hook id, typename Function>
CUresult handle_capture_end(Engine& engine, Function real_function, CUstream stream, CUgraph* graph) {
  using Traits = HookTraits<id>;
  uint64_t capture = 0;
  shim_work([&] { capture = capture_id(driver_stream(stream, Traits::per_thread)); });
  CUresult result = real_function(stream, graph);
  if (!capture) return result;
  shim_work([&] { engine.end_capture(capture, result == CUDA_SUCCESS && graph ? *graph : nullptr); });
  return result;
}

// cuGetProcAddress (both ABI versions): the runtime and the math libraries fetch every driver function
// through it, including cuGetProcAddress itself. Hooked functions are answered with the shim's wrappers,
// of the flavour (`_ptsz` or not) the real call chose.
template <Hook id, typename Function, typename... Rest>
CUresult handle_proc_address(Engine&, Function real_function, const char* symbol, void** function,
                             Rest... rest) {
  CUresult result = real_function(symbol, function, rest...);
  if (result != CUDA_SUCCESS || !symbol || !function || !*function) return result;
  ShimScope scope;  // nothing here throws: the base names are the hook table's constants
  *function = substitute_wrapper(symbol, *function, true);
  return result;
}

// cuLibraryGetKernel / cuModuleGetFunction succeeded: on a driver without name queries (before CUDA 12.3) the
// name the kernel was looked up by is what names its launches (kernel_names.h).
template <typename Handle, typename Owner>
void remember_looked_up_kernel(Handle* handle, Owner, const char* name) {
  if (!handle || !*handle) return;
  shim_work([&] { remember_kernel_name(*handle, name); });
}

// Records who called an exported launch, library or graph-launch wrapper (one thread-local store; the
// other kinds do nothing). Every launch record gets it: a call site for launches whose stack was not walked.
template <Hook id>
inline void note_caller(void* return_address) {
  constexpr Kind kind = HookTraits<id>::kind;
  if constexpr (kind == Kind::Launch || kind == Kind::Library || kind == Kind::GraphLaunch ||
                kind == Kind::CaptureBegin || kind == Kind::GraphAddKernelNode)
    thread_context().entry_caller = reinterpret_cast<uintptr_t>(return_address);
}

template <Hook id, typename... Args>
typename HookTraits<id>::Result intercept(Args... args) {
  using Traits = HookTraits<id>;
  auto real_function = real<id>();
  if (!real_function) return missing_real<id>();
#ifdef CUDA_BLOCKRUN_BENCH_SWITCH
  // The benchmark variant only (bench_switch.h): the call timed, on or switched off; while switched off it
  // forwards every call, as if the shim were not there, but for the lookups (cuGetProcAddress), which must
  // keep handing out the wrappers for later.
  bench::Span bench_span(static_cast<size_t>(id), Traits::name, true);
  if constexpr (Traits::kind != Kind::ProcAddress)
    if (bench::switched_off()) return real_function(args...);
#endif
  // Before the engine check: a capture that begins before the first launch must still be known.
  if constexpr (Traits::kind == Kind::CaptureBegin) note_capture_begins();
  Engine* engine = active_engine();
  if (!engine) return real_function(args...);
  if constexpr (Traits::kind == Kind::Launch && Traits::layer == Layer::Runtime) {
    return handle_runtime_launch<id>(*engine, real_function, args...);
  } else if constexpr (Traits::kind == Kind::Launch) {
    return handle_driver_launch<id>(*engine, real_function, args...);
  } else if constexpr (Traits::kind == Kind::Sync || Traits::kind == Kind::Query) {
    return handle_sync<id>(*engine, real_function, args...);
  } else if constexpr (id == Hook::cuLibraryGetKernel || id == Hook::cuModuleGetFunction) {
    CUresult result = handle_call<id>(*engine, real_function, args...);
    if (result == CUDA_SUCCESS) remember_looked_up_kernel(args...);
    return result;
  } else if constexpr (Traits::kind == Kind::Call || Traits::kind == Kind::Watch) {
    return handle_call<id>(*engine, real_function, args...);
  } else if constexpr (Traits::kind == Kind::Event) {
    return handle_event<id>(*engine, real_function, args...);
  } else if constexpr (Traits::kind == Kind::Library) {
    return handle_library<id>(*engine, real_function, args...);
  } else if constexpr (Traits::kind == Kind::GraphLaunch) {
    return handle_graph_launch<id>(*engine, real_function, args...);
  } else if constexpr (Traits::kind == Kind::GraphInstantiate) {
    return handle_graph_instantiate<id>(*engine, real_function, args...);
  } else if constexpr (Traits::kind == Kind::CaptureBegin) {
    return handle_capture_begin<id>(*engine, real_function, args...);
  } else if constexpr (Traits::kind == Kind::CaptureEnd) {
    return handle_capture_end<id>(*engine, real_function, args...);
  } else if constexpr (Traits::kind == Kind::GraphAddKernelNode) {
    return handle_graph_add_kernel_node<id>(*engine, real_function, args...);
  } else {
    return handle_proc_address<id>(*engine, real_function, args...);
  }
}

}  // namespace

}  // namespace blockrun::shim

#define CUDA_BLOCKRUN_HOOK(layer, kind, stream, return_type, name, parameters, arguments) \
  extern "C" __attribute__((visibility("default"))) return_type name parameters {         \
    blockrun::shim::note_caller<blockrun::shim::Hook::name>(__builtin_return_address(0)); \
    return blockrun::shim::intercept<blockrun::shim::Hook::name> arguments;               \
  }
#include "hooks.def"

#ifdef CUDA_BLOCKRUN_BENCH_SWITCH
// on != 0: the shim acts (as at start); 0: every wrapper forwards. The caller switches between launches, with
// the device synchronized.
extern "C" __attribute__((visibility("default"))) void cuda_blockrun_bench_switch(int on) {
  blockrun::shim::bench::g_switched_off.store(on == 0, std::memory_order_relaxed);
}
// on != 0: every hooked call is timed from now on (bench_switch.h); 0: none (as at start).
extern "C" __attribute__((visibility("default"))) void cuda_blockrun_bench_time_calls(int on) {
  blockrun::shim::bench::time_calls(on != 0);
}
// Appends the calls' tallies since the last report to `path`, each line headed by `label`; 0, or -1.
extern "C" __attribute__((visibility("default"))) int cuda_blockrun_bench_calls(const char* path,
                                                                                const char* label) {
  return path && label ? blockrun::shim::bench::report(path, label) : -1;
}
#endif

namespace blockrun::shim {

namespace {

// "cuMemcpyHtoD_v2_ptds" -> "cuMemcpyHtoD": the name cuGetProcAddress is asked for, a prefix of the hook's
// own name (its `_ptsz` or `_ptds`, then its `_vN`, taken off). Worked out when the shim is compiled.
constexpr bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}
constexpr std::string_view base_name_of(std::string_view name) {
  for (std::string_view suffix : {std::string_view("_ptsz"), std::string_view("_ptds")}) {
    if (ends_with(name, suffix)) name.remove_suffix(suffix.size());
  }
  size_t version = name.rfind("_v");
  if (version == std::string_view::npos || version + 2 >= name.size()) return name;
  for (char digit : name.substr(version + 2)) {
    if (digit < '0' || digit > '9') return name;
  }
  return name.substr(0, version);
}
static_assert(base_name_of("cuMemcpyHtoD_v2_ptds") == "cuMemcpyHtoD");
static_assert(base_name_of("cuLaunchKernel_ptsz") == "cuLaunchKernel");
static_assert(base_name_of("cuStreamGetCaptureInfo_v3") == "cuStreamGetCaptureInfo");
static_assert(base_name_of("cuGetProcAddress_v2") == "cuGetProcAddress");
static_assert(base_name_of("cuCtxCreate_v") == "cuCtxCreate_v");
static_assert(base_name_of("cuLaunchKernelEx") == "cuLaunchKernelEx");

// The base name as a constant of the table (the length of the name's prefix), never made at run time.
template <size_t length>
constexpr size_t kBaseLength = length;

struct HookRow {
  const char* name;
  Layer layer;
  void* wrapper;
  std::string_view base_name;  // the name cuGetProcAddress is asked for (base_name_of)
};

const HookRow kHookRows[] = {
#define CUDA_BLOCKRUN_HOOK(layer, kind, stream, return_type, name, parameters, arguments)                \
  {#name, Layer::layer, reinterpret_cast<void*>(static_cast<HookTraits<Hook::name>::Function>(&::name)), \
   std::string_view(#name, kBaseLength<base_name_of(#name).size()>)},
#include "hooks.def"
};

struct HelperRow {
  const char* name;
  Layer layer;
};

const HelperRow kHelperRows[] = {
#define CUDA_BLOCKRUN_REAL(layer, return_type, name, parameters) {#name, Layer::layer},
#include "hooks.def"
};

}  // namespace

// The real function of a hook, found (and cached) like real<id>() but by index.
void* lookup_hook_address(Hook hook) {
  size_t index = static_cast<size_t>(hook);
  std::atomic<void*>& slot = hook_addresses[index];
  void* address = slot.load(std::memory_order_acquire);
  if (address) return address;
  address = find_real(kHookRows[index].name, kHookRows[index].layer);
  if (address) slot.store(address, std::memory_order_release);
  return address;
}

void claim_driver_library() {
  // RTLD_NODELETE: the table written below must outlive any dlclose of the program's.
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!driver) return;  // no driver: nothing will launch
  // The real functions first, from the table as it still is.
  for (size_t index = 0; index < static_cast<size_t>(Hook::Count); ++index) {
    if (kHookRows[index].layer != Layer::Driver || hook_addresses[index].load(std::memory_order_acquire))
      continue;
    if (void* address = real_dlsym(driver, kHookRows[index].name))
      hook_addresses[index].store(address, std::memory_order_release);
  }
  for (size_t index = 0; index < static_cast<size_t>(Helper::Count); ++index) {
    if (kHelperRows[index].layer != Layer::Driver || helper_addresses[index].load(std::memory_order_acquire))
      continue;
    if (void* address = real_dlsym(driver, kHelperRows[index].name))
      helper_addresses[index].store(address, std::memory_order_release);
  }
  for (size_t index = 0; index < static_cast<size_t>(Hook::Count); ++index) {
    if (kHookRows[index].layer == Layer::Driver && hook_addresses[index].load(std::memory_order_acquire))
      point_symbol_at(driver, kHookRows[index].name, kHookRows[index].wrapper);
  }
}

void* substitute_wrapper(const char* symbol, void* address, bool by_base_name) {
  if (!hands_out_wrappers()) return address;
  std::string_view asked = by_base_name ? std::string_view(symbol) : std::string_view();
  for (size_t index = 0; index < static_cast<size_t>(Hook::Count); ++index) {
    const HookRow& row = kHookRows[index];
    bool candidate = by_base_name ? row.layer == Layer::Driver && row.base_name == asked
                                  : std::strcmp(row.name, symbol) == 0;
    if (!candidate) continue;
    // The real function of this hook, wherever the program's lookup found it.
    if (lookup_hook_address(static_cast<Hook>(index)) == address) return row.wrapper;
  }
  return address;
}

}  // namespace blockrun::shim
// SPDX-License-Identifier: MIT
