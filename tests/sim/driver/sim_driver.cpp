// Simulated CUDA driver (libcuda.so.1): a test double that models streams, device faults, sticky errors and
// stream capture.
//
// Everything here exists so that cuda-blockrun can be tested on a machine without a GPU. The behaviour
// follows /work/shared/reference/cuda-interposition.md (measured on an H200) and the CUDA 13.0 headers; where
// the hardware's behaviour has a time component (a kernel "still running") the sim makes it deterministic:
// work completes at once (a kernel named in CUDA_SIM_KERNEL_LAG: after a given number of later launches),
// and a fault stays pending until the host's next call that touches the device (CUDA_SIM_FAULT_SURFACES=
// next-call, the default: the faulting kernel has finished by then) or, with CUDA_SIM_FAULT_SURFACES=sync,
// "in flight" on its stream until a call that waits on that stream.
//
// Exported names are exactly those the CUDA 13 cuda.h compiles calls to (cuMemAlloc_v2,
// cuStreamBeginCapture_v2, ...), plus the _ptsz/_ptds flavours the real driver exports, plus the legacy entry
// points the runtime can ask for. All definitions use those final names explicitly, so the renaming macros of
// cuda.h do not matter. entry_points.def lists every entry point: it makes the ones that only forward to the
// model (at the end of this file) and cuGetProcAddress's table; the others are written out below.

#include <cuda.h>

#include <cxxabi.h>
#include <dlfcn.h>
#include <fnmatch.h>

#include <algorithm>
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

// The CUDA version this copy of the driver plays (cuDriverGetVersion), from driver_version.cpp: the one file
// each copy compiles for itself (CMakeLists.txt).
int sim_built_driver_version();

// cuda.h maps these names to their newest versions; the driver also exports the old entry points themselves.
#undef cuGetProcAddress
#undef cuStreamBeginCapture
#undef cuStreamWriteValue64
#undef cuEventElapsedTime

#define SIM_API extern "C" __attribute__((visibility("default")))

namespace {

// ---------------------------------------------------------------------------------------------------------------
// Object model. Every handle given out is a pointer to one of these; g_objects tells its kind, so that a
// handle of the wrong kind (a CUkernel passed to cuFuncGetName, a freed stream) is rejected instead of
// dereferenced.
// ---------------------------------------------------------------------------------------------------------------
enum class Kind { Stream, Event, Library, Kernel, Module, Function, Graph, GraphExec, LogCallback };

// A device fault that happened on a stream but has not been observed by the host yet.
struct Fault {
  CUresult err = CUDA_SUCCESS;
  uint64_t seq = 0;  // global order, so a device-wide sync reports the earliest fault
  explicit operator bool() const { return err != CUDA_SUCCESS; }
};

struct Graph;

struct Capture {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  std::thread::id thread;  // the thread that began the capture
  Graph* graph = nullptr;  // receives the captured work
  uint64_t id = 0;
  // The stream joined a capture begun on another stream (the origin) by waiting on an event recorded in it
  // (cuStreamWaitEvent): it shares the origin's id, graph, mode and thread; only the origin ends the capture,
  // and that ends it for every joined stream too.
  bool joined = false;
};

struct Node;

struct Stream {
  unsigned flags = 0;
  bool legacy = false;      // the legacy default stream (handle 0 / CU_STREAM_LEGACY)
  bool per_thread = false;  // a thread's per-thread default stream
  Fault fault;
  Capture cap;
  // CUDA_SIM_KERNEL_LAG: a kernel of the stream is still running until the device has made `running_until`
  // launches (0: none is); the stream writes, copies, memsets and host functions queued behind it wait in
  // `held`, in order. `run` numbers that running kernel, uniquely on the device, for the events recorded
  // behind it.
  unsigned long running_until = 0;
  uint64_t run = 0;
  std::vector<Node> held;
};

struct Event {
  unsigned flags = 0;
  bool captured = false;    // last recorded into a capturing stream
  uint64_t capture_id = 0;  // ... into this capture (Capture::id)
  bool recorded = false;    // recorded outside a capture at least once: `time` is valid
  // Host time of the last record. Work completes at once (kernels run, and busy-wait for CUDA_SIM_KERNEL_US,
  // inside the launch call), so this is when everything before the event in its stream had completed.
  std::chrono::steady_clock::time_point time;
  Fault fault;  // a fault that precedes the event in its stream: waiting on the event reveals it
  // Recorded behind a kernel still running (CUDA_SIM_KERNEL_LAG) on stream `held_on`, its run `held_run`:
  // waiting on the event completes that kernel, and a fault that kills it reaches the event.
  const Stream* held_on = nullptr;
  uint64_t held_run = 0;
};

// Which kernel parameters are device pointers the kernel dereferences. Only images written by the sim itself
// (the simulated cuBLAS) carry this information; see parse_image().
using PtrParams = std::vector<int>;

struct Function;
struct Kernel {
  std::string name;  // mangled
  PtrParams ptr_params;
  Function* func = nullptr;  // created by cuKernelGetFunction
};
struct Library {
  PtrParams ptr_params;
  std::map<std::string, Kernel*> kernels;
};
struct Function {
  std::string name;  // mangled
  PtrParams ptr_params;
};
struct Module {
  PtrParams ptr_params;
  std::map<std::string, Function*> funcs;
};

// One recorded operation of a captured stream; replayed by cuGraphLaunch.
struct Node {
  enum Type { KernelLaunch, WriteValue64, Memset, Memcpy, HostFunc } type = KernelLaunch;
  // KernelLaunch
  std::string name;
  std::vector<uint64_t>
      ptrs;  // values of the checked pointer parameters, copied at capture time as CUDA does
  // WriteValue64 / Memset / Memcpy
  CUdeviceptr dst = 0, src = 0;
  uint64_t value = 0;
  size_t bytes = 0;
  unsigned elem = 1;
  // HostFunc
  CUhostFn fn = nullptr;
  void* user = nullptr;
};

struct Graph {
  std::vector<std::unique_ptr<Node>> nodes;
};
struct GraphExec {
  std::vector<Node> nodes;
};

struct FaultSpec {
  std::string pattern;  // fnmatch pattern on the mangled name or the demangled base name
  unsigned long ordinal = 1;
  CUresult err = CUDA_ERROR_ILLEGAL_ADDRESS;
};

// CUDA_SIM_KERNEL_US: launches of kernels matching `pattern` (as FaultSpec) take `us` microseconds; in
// CUDA_SIM_KERNEL_LAG `us` is a number of launches.
struct KernelTime {
  std::string pattern;
  unsigned long us = 0;
};

// A driver error-log callback (cuLogsRegisterCallback); its address is the CUlogsCallbackHandle.
struct LogCallback {
  CUlogsCallback fn;
  void* user;
};

struct Alloc {
  size_t size;
  bool host;  // page-locked host memory (cuMemHostAlloc); its device address equals the host address (UVA)
};

struct Stats {
  unsigned long launches = 0, synchronizes = 0, synchronizes_during_capture = 0, captures_invalidated = 0,
                faults_injected = 0, faults_surfaced = 0, capture_state_queries = 0,
                capture_mode_exchanges = 0, stream_queries = 0, stream_queries_done = 0,
                stream_writes = 0;  // cuStreamWriteValue64 calls accepted (captured or run)
};

struct State {
  std::mutex mu;
  bool initialized = false;  // cuInit was called
  // Set in a child forked after cuInit: as with the real driver, CUDA cannot be used there, and every call
  // that needs it returns CUDA_ERROR_NOT_INITIALIZED (the runtime's cudaErrorInitializationError).
  bool forked = false;
  CUresult sticky = CUDA_SUCCESS;
  uint64_t fault_seq = 0;
  uint64_t capture_ids = 0;
  Fault orphan;  // fault of a stream destroyed before anyone waited on it: still reported device-wide
  Stream legacy;
  std::set<Stream*> streams;  // every live stream, the legacy and per-thread ones included
  std::unordered_map<const void*, Kind> objects;
  std::map<uintptr_t, Alloc> allocs;
  // Launches per mangled name, the ordinals of CUDA_SIM_FAULT; with CUDA_SIM_FAULT_THREAD only the named
  // thread's launches are counted.
  std::unordered_map<std::string, unsigned long> launch_counts;
  std::vector<FaultSpec> fault_specs;
  bool fault_specs_parsed = false;
  std::vector<KernelTime> kernel_times;
  bool kernel_times_parsed = false;
  std::vector<KernelTime> kernel_lags;  // CUDA_SIM_KERNEL_LAG, parsed with kernel_times
  uint64_t lag_runs = 0;                // numbers the kernels that lag (Stream::run)
  // CUDA_SIM_QUERY_NOT_READY: kernels that ran since the last successful synchronize keep cuStreamQuery "not
  // ready".
  unsigned long unsynchronized_launches = 0;
  std::vector<LogCallback*> log_callbacks;  // in registration order
  Stats stats;
  int primary_ctx_refs = 0;
};

// Heap-allocated and never freed: the state must outlive every static destructor, because programs call the
// driver (and the stats are written) during exit.
State& S() {
  static State* s = [] {
    State* st = new State;
    st->legacy.legacy = true;
    st->streams.insert(&st->legacy);
    // In a forked child the mutex may be held by a parent thread the child does not have: a fresh one.
    pthread_atfork(nullptr, nullptr, [] {
      new (&S().mu) std::mutex;
      if (S().initialized) S().forked = true;
    });
    return st;
  }();
  return *s;
}

// The one simulated context; its address is the CUcontext handle.
struct Ctx {
  int dummy;
} g_primary_ctx;

thread_local CUcontext t_current_ctx = nullptr;
thread_local CUstreamCaptureMode t_capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
thread_local Stream* t_per_thread_stream =
    nullptr;  // leaked on thread exit on purpose: a fault may outlive it

// ---------------------------------------------------------------------------------------------------------------
// Helpers; all of them expect S().mu to be held.
// ---------------------------------------------------------------------------------------------------------------
template <class T>
T* lookup(const void* h, Kind k) {
  auto it = S().objects.find(h);
  return (it != S().objects.end() && it->second == k) ? static_cast<T*>(const_cast<void*>(h)) : nullptr;
}

Stream* per_thread_stream() {
  if (!t_per_thread_stream) {
    t_per_thread_stream = new Stream;
    t_per_thread_stream->per_thread = true;
    S().streams.insert(t_per_thread_stream);
  }
  return t_per_thread_stream;
}

// Stream handle -> stream. 0 means the legacy stream, except in a _ptsz entry point where it means the
// calling thread's per-thread default stream; CU_STREAM_LEGACY and CU_STREAM_PER_THREAD are explicit either
// way.
Stream* resolve_stream(CUstream h, bool ptsz) {
  if (h == nullptr) return ptsz ? per_thread_stream() : &S().legacy;
  if (h == CU_STREAM_LEGACY) return &S().legacy;
  if (h == CU_STREAM_PER_THREAD) return per_thread_stream();
  return lookup<Stream>(h, Kind::Stream);
}

bool capturing(const Stream* s) {
  return s->cap.status != CU_STREAM_CAPTURE_STATUS_NONE;
}

// Invalidates the capture s takes part in: for every stream in it (the origin and the streams that joined
// it), counted once.
void invalidate(Stream* s) {
  if (s->cap.status != CU_STREAM_CAPTURE_STATUS_ACTIVE) return;
  const uint64_t id = s->cap.id;
  for (Stream* o : S().streams)
    if (o->cap.status == CU_STREAM_CAPTURE_STATUS_ACTIVE && o->cap.id == id)
      o->cap.status = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
  S().stats.captures_invalidated++;
}

// The origin stream of the running capture with this id (the one that began it), or null: the capture has
// ended.
Stream* capture_origin(uint64_t id) {
  for (Stream* s : S().streams)
    if (s->cap.status != CU_STREAM_CAPTURE_STATUS_NONE && s->cap.id == id && !s->cap.joined) return s;
  return nullptr;
}

// The capture of `origin` ends (or its stream goes away): every stream that joined it leaves capture mode.
void release_joined(uint64_t id) {
  for (Stream* s : S().streams)
    if (s->cap.joined && s->cap.id == id) s->cap = Capture{};
}

// The context dies: the fault becomes the sticky error of the context and every pending fault is moot.
CUresult make_sticky(const Fault& f) {
  State& st = S();
  st.sticky = f.err;
  st.stats.faults_surfaced++;
  for (Stream* s : st.streams) {
    s->fault = Fault{};
    s->running_until = 0;  // nothing runs on a dead context: kernels still running never complete
    s->held.clear();
  }
  st.orphan = Fault{};
  return f.err;
}

// Earliest pending fault anywhere on the device (what a device-wide wait runs into first).
Fault earliest_fault() {
  State& st = S();
  Fault best = st.orphan;
  for (Stream* s : st.streams)
    if (s->fault && (!best || s->fault.seq < best.seq)) best = s->fault;
  return best;
}

// A wait on the given streams (nullptr entries ignored) reveals their pending faults.
CUresult surface(std::initializer_list<Stream*> list) {
  Fault best;
  for (Stream* s : list)
    if (s && s->fault && (!best || s->fault.seq < best.seq)) best = s->fault;
  return best ? make_sticky(best) : CUDA_SUCCESS;
}

// A wait that covers the whole device (legacy stream, context synchronize, synchronous copies).
CUresult surface_all() {
  Fault f = earliest_fault();
  return f ? make_sticky(f) : CUDA_SUCCESS;
}

// Whether the switch `name` is set to 1 in the environment.
bool env_switch(const char* name) {
  const char* env = std::getenv(name);
  return env && std::strcmp(env, "1") == 0;
}

// The CUDA version the driver plays: sim_built_driver_version() (13000, driver 580; a copy built to play an
// older driver answers lower), or CUDA_SIM_DRIVER_VERSION (read once; a number such as 12020, driver 535).
// What an older driver lacks is what cuGetProcAddress does not know: every row of entry_points.def newer than
// it.
int driver_version() {
  static const int version = [] {
    const char* env = std::getenv("CUDA_SIM_DRIVER_VERSION");
    if (!env || !*env) return sim_built_driver_version();
    char* end = nullptr;
    long value = std::strtol(env, &end, 10);
    if (*end || value < 2000 || value > 99999) {
      std::fprintf(stderr, "sim driver: CUDA_SIM_DRIVER_VERSION=%s is not a CUDA version such as 12020\n",
                   env);
      return sim_built_driver_version();
    }
    return static_cast<int>(value);
  }();
  return version;
}

// CUDA_SIM_INIT_ERROR=no-device|NUMBER (read at cuInit; empty: unset): cuInit fails with that CUresult and
// the driver stays uninitialized, as on a machine whose driver finds no GPU (100), whose kernel module and
// library differ (803), or without the fabric manager (802).
CUresult init_error() {
  const char* env = std::getenv("CUDA_SIM_INIT_ERROR");
  if (!env || !*env) return CUDA_SUCCESS;
  if (std::strcmp(env, "no-device") == 0) return CUDA_ERROR_NO_DEVICE;
  char* end = nullptr;
  long value = std::strtol(env, &end, 10);
  if (*end || value <= 0) {
    std::fprintf(stderr, "sim driver: CUDA_SIM_INIT_ERROR=%s is neither no-device nor a CUresult number\n",
                 env);
    return CUDA_SUCCESS;
  }
  return static_cast<CUresult>(value);
}

// CUDA_SIM_FAULT_STOPS_DEVICE=1 (read once): after a fault anywhere, no later work runs on any stream, as
// when the context dies while other streams still have work queued: several streams then have work in flight.
bool fault_stops_device() {
  static const bool set = env_switch("CUDA_SIM_FAULT_STOPS_DEVICE");
  return set;
}

// CUDA_SIM_FAULT_THREAD=NAME (read once; empty: unset): the ordinals of CUDA_SIM_FAULT count only the
// launches made by host threads named NAME (pthread_setname_np), and only those can fault. Threads that
// interleave differently from run to run give a kernel's global ordinal to different launches (measured on
// the H200); a fault that belongs to one thread's data happens in that thread's N-th launch whatever the
// interleaving.
const std::string& fault_thread() {
  static const std::string name = [] {
    const char* env = std::getenv("CUDA_SIM_FAULT_THREAD");
    std::string n = env ? env : "";
    if (n.size() > 15)  // a thread name holds 15 characters and the NUL
      std::fprintf(stderr,
                   "[cuda-sim] CUDA_SIM_FAULT_THREAD: '%s' is longer than a thread name (15 characters): no "
                   "launch will fault\n",
                   n.c_str());
    return n;
  }();
  return name;
}

// Whether the calling thread's name is CUDA_SIM_FAULT_THREAD's. Asked at each launch, not cached: a program
// may name its threads after they first used CUDA.
bool on_fault_thread() {
  char name[16] = {};
  return pthread_getname_np(pthread_self(), name, sizeof name) == 0 && fault_thread() == name;
}

// CUDA_SIM_FAULT_SURFACES (read once): where a pending fault becomes the context's sticky error.
//   next-call (default): at the next call of any kind that touches the device, from any thread, as on the
//     H200: the faulting kernel has finished (and killed the context) before the host's next call.
//   sync: only at a call that waits for the faulting stream (synchronize, query, synchronous copy, ...): a
//     kernel still running when the program next waits, e.g. several launches in flight before a synchronize.
bool faults_surface_at_next_call() {
  static const bool next_call = [] {
    const char* env = std::getenv("CUDA_SIM_FAULT_SURFACES");
    if (!env || !*env || std::strcmp(env, "next-call") == 0) return true;
    if (std::strcmp(env, "sync") == 0) return false;
    std::fprintf(stderr, "[cuda-sim] CUDA_SIM_FAULT_SURFACES: unknown value '%s', using next-call\n", env);
    return true;
  }();
  return next_call;
}

// The sticky error as a call that touches the device sees it. In next-call mode the earliest fault pending
// anywhere on the device surfaces first. The calls that must not surface it read S().sticky instead: stream
// writes and event records (enqueued while the faulting kernel may still run; the shim issues them right
// after a launch), capture-state queries.
CUresult sticky_error() {
  if (!S().sticky && faults_surface_at_next_call()) surface_all();
  return S().sticky;
}

// For the calls the sim lets through on a dead context in sync mode (today's model: stream destroy, module
// and library unload, capture end): in next-call mode they fail with the sticky error like every other call
// that touches the device, surfacing a pending fault first.
CUresult next_call_error() {
  return faults_surface_at_next_call() ? sticky_error() : CUDA_SUCCESS;
}

// CUDA_SIM_NO_STREAM_MEM_OPS=1 (read once): a device without 64-bit stream memory operations.
bool no_stream_mem_ops() {
  static const bool set = env_switch("CUDA_SIM_NO_STREAM_MEM_OPS");
  return set;
}

// The fault a new operation on s would wait behind: s's own, or (legacy stream, or any stream with
// CUDA_SIM_FAULT_STOPS_DEVICE) any on the device.
Fault preceding_fault(Stream* s) {
  return s->legacy || fault_stops_device() ? earliest_fault() : s->fault;
}

// preceding_fault(s) for work being queued on s now. With CUDA_SIM_FAULT_STOPS_DEVICE that can be another
// stream's fault: s then takes it as its own, since its work never completes either. A wait on s alone (its
// synchronize or query, an event recorded on it, a stream that waits on such an event) then surfaces the
// fault, as on the hardware, where that wait ends only when the fault has killed the context; without it a
// thread that synchronizes its own per-thread stream would see its never-run work as complete.
Fault queued_behind(Stream* s) {
  const Fault f = preceding_fault(s);
  if (f && !s->fault && !s->legacy) s->fault = f;  // the legacy stream's waits cover the device already
  return f;
}

// CUDA's rules for "potentially unsafe" calls while stream captures are in progress (cudaStreamBeginCapture
// docs): a thread in GLOBAL interaction mode may not make them while it has a non-relaxed capture of its own
// or while any other thread has a GLOBAL-mode capture; THREAD_LOCAL only looks at the thread's own
// non-relaxed captures; RELAXED is never stopped. The call fails with 900 and the captures that forbade it
// are invalidated.
CUresult check_unsafe_call() {
  State& st = S();
  if (t_capture_mode == CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_SUCCESS;
  const std::thread::id me = std::this_thread::get_id();
  bool hit = false;
  for (Stream* s : st.streams) {
    if (!capturing(s)) continue;
    const bool own = s->cap.thread == me;
    const bool forbids = (own && s->cap.mode != CU_STREAM_CAPTURE_MODE_RELAXED) ||
                         (!own && t_capture_mode == CU_STREAM_CAPTURE_MODE_GLOBAL &&
                          s->cap.mode == CU_STREAM_CAPTURE_MODE_GLOBAL);
    if (forbids) {
      hit = true;
      invalidate(s);
    }
  }
  if (!hit) return CUDA_SUCCESS;
  st.stats.synchronizes_during_capture++;
  return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

// Work queued on the legacy stream would wait for every blocking stream; if one of them is capturing that is
// an implicit dependency on the capture, which CUDA refuses (906) and which invalidates the capture.
CUresult check_legacy_implicit(Stream* s, bool invalidate_captures) {
  if (!s->legacy) return CUDA_SUCCESS;
  bool hit = false;
  for (Stream* o : S().streams) {
    if (o == s || !capturing(o) || (o->flags & CU_STREAM_NON_BLOCKING)) continue;
    if (o->cap.mode != CU_STREAM_CAPTURE_MODE_GLOBAL) continue;
    hit = true;
    if (invalidate_captures) invalidate(o);
  }
  return hit ? CUDA_ERROR_STREAM_CAPTURE_IMPLICIT : CUDA_SUCCESS;
}

// Where asynchronous work goes. Returns SUCCESS with *rec set when the work must be recorded into a capture
// graph, SUCCESS with *rec null when it must execute, or an error. `surfaces`: whether the call surfaces a
// pending fault (sticky_error()); stream writes do not.
CUresult route_async(Stream* s, Graph** rec, bool surfaces) {
  *rec = nullptr;
  if (s->cap.status == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
    *rec = s->cap.graph;
    return CUDA_SUCCESS;
  }
  if (s->cap.status == CU_STREAM_CAPTURE_STATUS_INVALIDATED) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  if (CUresult r = check_legacy_implicit(s, true)) return r;
  return surfaces ? sticky_error() : S().sticky;
}

const Alloc* find_alloc(uintptr_t p, size_t n) {
  auto& a = S().allocs;
  auto it = a.upper_bound(p);
  if (it == a.begin()) return nullptr;
  --it;
  if (p < it->first || p + n > it->first + it->second.size) return nullptr;
  return &it->second;
}

bool is_device_accessible(uint64_t p, size_t n) {
  return find_alloc(static_cast<uintptr_t>(p), n ? n : 1) != nullptr;
}

// A host pointer as a device address: the same number (unified addressing).
CUdeviceptr device_address(const void* p) {
  return reinterpret_cast<CUdeviceptr>(p);
}

// --- fault injection (CUDA_SIM_FAULT)
// ---------------------------------------------------------------------------

// Splits "ns::kern:2:assert" on the single colons only, so C++ qualified names survive.
std::vector<std::string> split_fields(const std::string& s) {
  std::vector<std::string> out(1);
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == ':' && i + 1 < s.size() && s[i + 1] == ':') {
      out.back() += "::";
      ++i;
    } else if (s[i] == ':') {
      out.emplace_back();
    } else {
      out.back() += s[i];
    }
  }
  return out;
}

CUresult parse_error_kind(const std::string& e) {
  if (e.empty() || e == "illegal-address") return CUDA_ERROR_ILLEGAL_ADDRESS;
  if (e == "assert") return CUDA_ERROR_ASSERT;
  if (e == "launch-failure") return CUDA_ERROR_LAUNCH_FAILED;
  if (e == "misaligned-address") return CUDA_ERROR_MISALIGNED_ADDRESS;
  if (e == "illegal-instruction") return CUDA_ERROR_ILLEGAL_INSTRUCTION;
  if (e == "invalid-address-space") return CUDA_ERROR_INVALID_ADDRESS_SPACE;
  char* end = nullptr;
  long v = std::strtol(e.c_str(), &end, 10);
  if (end && *end == '\0' && v > 0) return static_cast<CUresult>(v);
  std::fprintf(stderr, "[cuda-sim] CUDA_SIM_FAULT: unknown error kind '%s', using illegal-address\n",
               e.c_str());
  return CUDA_ERROR_ILLEGAL_ADDRESS;
}

// Calls `use` with each non-empty item of the comma-separated list in the environment variable `name`.
template <class Use>
void for_each_env_item(const char* name, Use use) {
  const char* env = std::getenv(name);
  if (!env) return;
  std::string all(env);
  size_t start = 0;
  while (start <= all.size()) {
    size_t comma = all.find(',', start);
    std::string item = all.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? all.size() + 1 : comma + 1;
    if (!item.empty()) use(item);
  }
}

void parse_fault_specs() {
  State& st = S();
  if (st.fault_specs_parsed) return;
  st.fault_specs_parsed = true;
  for_each_env_item("CUDA_SIM_FAULT", [&](const std::string& item) {
    std::vector<std::string> f = split_fields(item);
    FaultSpec spec;
    spec.pattern = f[0];
    if (f.size() > 1 && !f[1].empty()) spec.ordinal = std::strtoul(f[1].c_str(), nullptr, 10);
    if (f.size() > 2) spec.err = parse_error_kind(f[2]);
    if (!spec.pattern.empty() && spec.ordinal > 0) st.fault_specs.push_back(spec);
  });
}

// "_Z7stencilPfix" -> "stencil"; "_ZN2ns4kernIiEEvPT_" -> "ns::kern<int>" (and "ns::kern" below).
// Non-C++ names (cuBLAS kernels, extern "C") are their own base name.
std::string demangled_base(const std::string& mangled) {
  int status = 0;
  char* d = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  if (status != 0 || !d) return mangled;
  std::string s(d);
  std::free(d);
  // Cut the parameter list: the '(' that matches the last ')'.
  if (!s.empty() && s.back() == ')') {
    int depth = 0;
    for (size_t i = s.size(); i-- > 0;) {
      if (s[i] == ')')
        depth++;
      else if (s[i] == '(' && --depth == 0) {
        s.resize(i);
        break;
      }
    }
  }
  // Template functions demangle with their return type first ("void ns::kern<int>"): keep the last top-level
  // word.
  int angle = 0;
  for (size_t i = s.size(); i-- > 0;) {
    if (s[i] == '>')
      angle++;
    else if (s[i] == '<')
      angle--;
    else if (s[i] == ' ' && angle == 0 && s.compare(0, 8, "operator") != 0) {
      s = s.substr(i + 1);
      break;
    }
  }
  return s;
}

std::string strip_template_args(const std::string& s) {
  if (s.empty() || s.back() != '>') return s;
  int depth = 0;
  for (size_t i = s.size(); i-- > 0;) {
    if (s[i] == '>')
      depth++;
    else if (s[i] == '<' && --depth == 0)
      return s.substr(0, i);
  }
  return s;
}

// The names a CUDA_SIM_FAULT or CUDA_SIM_KERNEL_US pattern is matched against: the mangled name, the
// demangled name without its parameter list, and that without template arguments.
struct KernelNames {
  explicit KernelNames(const std::string& mangled)
      : mangled(mangled), base(demangled_base(mangled)), bare(strip_template_args(base)) {}
  bool match(const std::string& pattern) const {
    for (const std::string* cand : {&mangled, &base, &bare})
      if (fnmatch(pattern.c_str(), cand->c_str(), 0) == 0) return true;
    return false;
  }
  const std::string& mangled;
  const std::string base, bare;
};

CUresult injected_fault(const std::string& name, unsigned long ordinal) {
  parse_fault_specs();
  if (S().fault_specs.empty()) return CUDA_SUCCESS;
  const KernelNames names(name);
  for (const FaultSpec& f : S().fault_specs)
    if (f.ordinal == ordinal && names.match(f.pattern)) return f.err;
  return CUDA_SUCCESS;
}

// --- kernel durations (CUDA_SIM_KERNEL_US)
// ----------------------------------------------------------------------

// "stencil=200,ns::kern=5": NAME=NUMBER items of the variable `var`; NAME as in CUDA_SIM_FAULT (the last '='
// splits). `unit` names the number in the message about a malformed item.
void parse_name_numbers(const char* var, const char* unit, std::vector<KernelTime>* out) {
  for_each_env_item(var, [&](const std::string& item) {
    const size_t eq = item.rfind('=');
    char* end = nullptr;
    const unsigned long n = eq == std::string::npos ? 0 : std::strtoul(item.c_str() + eq + 1, &end, 10);
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size() || !end || *end != '\0') {
      std::fprintf(stderr, "[cuda-sim] %s: ignoring '%s' (expected NAME=%s)\n", var, item.c_str(), unit);
      return;
    }
    out->push_back(KernelTime{item.substr(0, eq), n});
  });
}

void parse_kernel_times() {
  State& st = S();
  if (st.kernel_times_parsed) return;
  st.kernel_times_parsed = true;
  parse_name_numbers("CUDA_SIM_KERNEL_US", "MICROSECONDS", &st.kernel_times);
  parse_name_numbers("CUDA_SIM_KERNEL_LAG", "LAUNCHES", &st.kernel_lags);
}

// The number of the first item of `list` that matches the kernel, else 0.
unsigned long first_match(const std::vector<KernelTime>& list, const std::string& name) {
  if (list.empty()) return 0;
  const KernelNames names(name);
  for (const KernelTime& t : list)
    if (names.match(t.pattern)) return t.us;
  return 0;
}

// How long a launch of the kernel takes: the first matching CUDA_SIM_KERNEL_US item, else 0.
unsigned long kernel_us(const std::string& name) {
  parse_kernel_times();
  return first_match(S().kernel_times, name);
}

// For how many later launches a launch of the kernel is still running: the first matching
// CUDA_SIM_KERNEL_LAG item, else 0.
unsigned long kernel_lag(const std::string& name) {
  parse_kernel_times();
  return first_match(S().kernel_lags, name);
}

// The simulated kernel's run time, spent inside the launch call (with the lock released), so that events
// recorded before and after the launch are at least this far apart.
void busy_wait(unsigned long us) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  while (std::chrono::steady_clock::now() < end) {
  }
}

// --- kernels still running (CUDA_SIM_KERNEL_LAG)
// ---------------------------------------------------------------

void execute_node(Stream* s, const Node& n);

// The kernel still running on s completes: the work held behind it runs, in order. Host functions run with
// the lock held, wherever the completion happens (a launch on another thread, a wait): CUDA forbids them to
// call CUDA, and one that did would deadlock the sim.
void complete_running(Stream* s);

// A device fault happened on a stream (the first one kills it; later work never runs). With
// CUDA_SIM_FAULT_STOPS_DEVICE it also kills the kernels still running on every stream (CUDA_SIM_KERNEL_LAG):
// they never complete, their streams take the fault, the work held behind them never runs and the events
// recorded behind them carry the fault. So a slow kernel launched before the faulting one on another stream
// stays unfinished, as on the H200 when the context dies under it.
void record_fault(Stream* s, CUresult err) {
  State& st = S();
  st.stats.faults_injected++;
  if (!s->fault) s->fault = Fault{err, ++st.fault_seq};
  if (!fault_stops_device()) return;
  for (Stream* o : st.streams) {
    if (!o->running_until) continue;
    for (const auto& [handle, kind] : st.objects) {
      if (kind != Kind::Event) continue;
      auto* e = static_cast<Event*>(const_cast<void*>(handle));
      if (e->held_on == o && e->held_run == o->run && !e->fault) e->fault = s->fault;
    }
    o->running_until = 0;
    o->held.clear();
    if (!o->fault) o->fault = s->fault;
  }
}

// A launch was made: the kernels still running whose lag it ends complete.
void advance_running() {
  const unsigned long now = S().stats.launches;
  for (Stream* s : S().streams)
    if (s->running_until && now >= s->running_until) complete_running(s);
}

// A wait that covers the whole device: every kernel still running completes.
void complete_all_running() {
  for (Stream* s : S().streams) complete_running(s);
}

// A wait on an event recorded behind a kernel still running completes that kernel (the stream's work up to
// the event).
void complete_for_event(const Event* e) {
  if (!e->held_on) return;
  for (Stream* s : S().streams)
    if (s == e->held_on && s->run == e->held_run) complete_running(s);
}

// A kernel "runs" on s: count it, decide whether it faults (fault injection, or a checked pointer parameter
// outside device memory), and leave the fault pending on the stream; the host only learns of it when it
// waits. Returns how many microseconds the kernel takes (CUDA_SIM_KERNEL_US): the caller busy-waits that
// long after releasing the lock. Work queued behind a fault never runs, so it takes no time.
unsigned long execute_kernel(Stream* s, const std::string& name, const std::vector<uint64_t>& ptrs) {
  State& st = S();
  const unsigned long us = queued_behind(s) ? 0 : kernel_us(name);
  st.stats.launches++;
  st.unsynchronized_launches++;
  CUresult err = CUDA_SUCCESS;
  if (fault_thread().empty() || on_fault_thread()) err = injected_fault(name, ++st.launch_counts[name]);
  if (!err)
    for (uint64_t p : ptrs)
      if (!is_device_accessible(p, 1)) err = CUDA_ERROR_ILLEGAL_ADDRESS;
  if (err) record_fault(s, err);
  advance_running();
  return us;
}

// Executes one non-kernel node (also used directly for uncaptured async operations).
void execute_node(Stream* s, const Node& n) {
  switch (n.type) {
    case Node::KernelLaunch:
      execute_kernel(s, n.name, n.ptrs);
      break;
    case Node::WriteValue64:
      if (queued_behind(s)) break;  // the preceding work never completes, so the value is never written
      if (s->running_until) {
        s->held.push_back(n);  // written when the kernel still running before it completes
        break;
      }
      if (!is_device_accessible(n.dst, 8)) {
        record_fault(s, CUDA_ERROR_ILLEGAL_ADDRESS);
        break;
      }
      __atomic_store_n(reinterpret_cast<uint64_t*>(n.dst), n.value, __ATOMIC_SEQ_CST);
      break;
    case Node::Memset:
      if (queued_behind(s)) break;
      if (s->running_until) {
        s->held.push_back(n);
        break;
      }
      if (n.elem == 1)
        std::memset(reinterpret_cast<void*>(n.dst), static_cast<int>(n.value), n.bytes);
      else
        for (size_t i = 0; i < n.bytes / 4; ++i)
          reinterpret_cast<uint32_t*>(n.dst)[i] = static_cast<uint32_t>(n.value);
      break;
    case Node::Memcpy:
      if (queued_behind(s)) break;
      if (s->running_until) {
        s->held.push_back(n);
        break;
      }
      std::memmove(reinterpret_cast<void*>(n.dst), reinterpret_cast<const void*>(n.src), n.bytes);
      break;
    case Node::HostFunc:
      break;  // run by the caller with the lock released
  }
}

void complete_running(Stream* s) {
  if (!s->running_until) return;
  s->running_until = 0;
  std::vector<Node> held;
  held.swap(s->held);
  for (const Node& n : held) {
    if (n.type != Node::HostFunc)
      execute_node(s, n);
    else if (!queued_behind(s))
      n.fn(n.user);
  }
}

// An asynchronous operation that route_async sent into a capture (`rec`) becomes a node of its graph;
// otherwise it runs now, if `runs` (a copy or memset of 0 bytes does nothing).
void record_or_run(Stream* s, Graph* rec, const Node& node, bool runs) {
  if (rec)
    rec->nodes.push_back(std::make_unique<Node>(node));
  else if (runs)
    execute_node(s, node);
}

Node memset_node(CUdeviceptr dst, uint32_t value, size_t count, unsigned elem) {
  Node node;
  node.type = Node::Memset;
  node.dst = dst;
  node.value = value;
  node.bytes = count * elem;
  node.elem = elem;
  return node;
}

// --- driver error log (cuLogsRegisterCallback)
// ----------------------------------------------------------------

std::string strfmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string strfmt(const char* f, ...) {
  va_list ap;
  va_start(ap, f);
  char buf[512];
  std::vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

const char* error_name(CUresult r);  // with the error strings, below

// What the driver logs when a call fails on a context that has a sticky error.
constexpr const char* kStickyText = "Sticky error detected";

// The error-log messages of one API call, handed to every registered callback (level CU_LOG_LEVEL_ERROR) when
// the object is destroyed. Declare it before the call takes S().mu, so that it is destroyed after the lock is
// released: callbacks run outside the mutex and may call back into the driver. Like the real driver, a
// failing call logs an optional explanation and then "Returning <code> (<name>) from <entry point>".
class ApiLog {
 public:
  explicit ApiLog(const char* entry) : entry_(entry) {}
  ApiLog(const ApiLog&) = delete;
  ApiLog& operator=(const ApiLog&) = delete;
  ~ApiLog() { deliver(); }

  // Passes r through; a failure is logged, after `why` when there is one.
  CUresult ret(CUresult r, const std::string& why = std::string()) {
    if (r == CUDA_SUCCESS) return r;
    if (!why.empty()) msgs_.push_back(why);
    msgs_.push_back(strfmt("Returning %d (%s) from %s", static_cast<int>(r), error_name(r), entry_));
    return r;
  }

 private:
  void deliver() {
    if (msgs_.empty()) return;
    std::vector<LogCallback> cbs;
    {
      std::lock_guard<std::mutex> lk(S().mu);
      for (const LogCallback* c : S().log_callbacks) cbs.push_back(*c);
    }
    for (const std::string& m : msgs_)
      for (const LogCallback& c : cbs) {
        std::vector<char> buf(m.c_str(), m.c_str() + m.size() + 1);  // NUL-terminated, writable: a copy each
        c.fn(c.user, CU_LOG_LEVEL_ERROR, buf.data(), m.size());
      }
  }

  const char* entry_;
  std::vector<std::string> msgs_;
};

// Resolves a launchable handle: a CUkernel (runtime) or a CUfunction (module API) are both accepted by
// cuLaunch*.
bool resolve_launchable(CUfunction f, std::string* name, const PtrParams** pp) {
  if (Kernel* k = lookup<Kernel>(f, Kind::Kernel)) {
    *name = k->name;
    *pp = &k->ptr_params;
    return true;
  }
  if (Function* fn = lookup<Function>(f, Kind::Function)) {
    *name = fn->name;
    *pp = &fn->ptr_params;
    return true;
  }
  return false;
}

// Launch-configuration limits (H200), checked in the driver's order; *why gets the driver's error-log text
// (measured on an H200 with driver 580, including its spelling "correspsonding").
CUresult check_dims(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                    unsigned shmem, std::string* why) {
  if (!bx || !by || !bz)
    *why =
        strfmt("Block dimensions (%u,%u,%u) include one or more zero values. All dimensions must be nonzero",
               bx, by, bz);
  else if (bx > 1024 || by > 1024 || bz > 64)
    *why = strfmt(
        "One or more of block dimensions of (%u,%u,%u) exceeds correspsonding maximum value of "
        "(1024,1024,64)",
        bx, by, bz);
  else if (static_cast<uint64_t>(bx) * by * bz > 1024)
    *why = strfmt("Requested block size of %llu threads exceeds device maximum 1024",
                  static_cast<unsigned long long>(bx) * by * bz);
  else if (!gx || !gy || !gz)
    *why = strfmt("Grid Dimension %s must be nonzero", !gx ? "X" : !gy ? "Y" : "Z");
  else if (gx > 2147483647u)
    *why = strfmt("Grid Dimension X of %u exceeds maximum value of 2147483647", gx);
  else if (gy > 65535 || gz > 65535)
    *why = strfmt("Grid Dimension %s of %u exceeds maximum value of 65535", gy > 65535 ? "Y" : "Z",
                  gy > 65535 ? gy : gz);
  else if (shmem > 232448)  // 227 KiB, the H200 opt-in maximum
    *why = strfmt(
        "Requested dynamic shared memory size of %u bytes exceeds "
        "maximum dynamic shared memory size of 232448 bytes",
        shmem);
  else
    return CUDA_SUCCESS;
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult require_init() {
  return S().initialized && !S().forked ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

// Common launch path of cuLaunchKernel / cuLaunchKernelEx / cuLaunchCooperativeKernel (and their _ptsz
// forms); `entry` is the exported name the caller used, for the error log.
CUresult do_launch(const char* entry, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                   unsigned by, unsigned bz, unsigned shmem, CUstream hs, void** params, bool ptsz,
                   bool cooperative) {
  ApiLog log(entry);  // declared before the lock: its messages are delivered after the lock is released
  std::unique_lock<std::mutex> lk(S().mu);
  if (CUresult r = require_init()) return log.ret(r);
  std::string name;
  const PtrParams* pp = nullptr;
  if (!resolve_launchable(f, &name, &pp)) return log.ret(CUDA_ERROR_INVALID_HANDLE);
  Stream* s = resolve_stream(hs, ptsz);
  if (!s) return log.ret(CUDA_ERROR_INVALID_HANDLE);
  if (CUresult r = sticky_error()) return log.ret(r, kStickyText);
  std::string why;
  if (CUresult r = check_dims(gx, gy, gz, bx, by, bz, shmem, &why)) return log.ret(r, why);
  if (cooperative) {
    // All blocks must be co-resident: 132 SMs x 2048 threads.
    const uint64_t limit = 132 * std::max<uint64_t>(2048 / (static_cast<uint64_t>(bx) * by * bz), 1);
    if (static_cast<uint64_t>(gx) * gy * gz > limit)
      return log.ret(
          CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE,
          strfmt("Requested cooperative grid dimensions (%u,%u,%u) exceed occupancy limit for this "
                 "kernel on this device of %llu blocks",
                 gx, gy, gz, static_cast<unsigned long long>(limit)));
  }
  std::vector<uint64_t> ptrs;
  if (params)
    for (int i : *pp) ptrs.push_back(*static_cast<const uint64_t*>(params[i]));
  Graph* rec = nullptr;
  if (CUresult r = route_async(s, &rec, true)) return log.ret(r);
  if (rec) {
    auto n = std::make_unique<Node>();
    n->type = Node::KernelLaunch;
    n->name = name;
    n->ptrs = ptrs;
    rec->nodes.push_back(std::move(n));
    return CUDA_SUCCESS;
  }
  complete_running(s);  // the kernels of a stream run in order: one still running completes first
  const unsigned long us = execute_kernel(s, name, ptrs);
  if (const unsigned long lag = kernel_lag(name); lag && !queued_behind(s)) {
    s->running_until = S().stats.launches + lag;  // CUDA_SIM_KERNEL_LAG: still running for `lag` launches
    s->run = ++S().lag_runs;
  }
  lk.unlock();
  if (us) busy_wait(us);  // the kernel "runs" inside the launch call
  return CUDA_SUCCESS;
}

// cuLaunchKernelEx[_ptsz]: the configuration's cooperative attribute makes it a cooperative launch.
CUresult launch_ex(const char* entry, const CUlaunchConfig* c, CUfunction f, void** params, bool ptsz) {
  if (!c) return ApiLog(entry).ret(CUDA_ERROR_INVALID_VALUE);
  bool cooperative = false;
  for (unsigned i = 0; i < c->numAttrs; ++i)
    if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE && c->attrs[i].value.cooperative)
      cooperative = true;
  return do_launch(entry, f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY, c->blockDimZ,
                   c->sharedMemBytes, c->hStream, params, ptsz, cooperative);
}

// Synchronous memcpy/memset: wait for the device (all streams; with _ptds the thread's default stream and the
// legacy stream), then run. Argument errors come first and wait for nothing.
CUresult sync_copy_prologue() {
  if (CUresult r = require_init()) return r;
  if (CUresult r = check_unsafe_call()) return r;
  return sticky_error();
}
CUresult sync_copy_wait(bool ptds) {
  complete_all_running();  // the kernels still running complete (CUDA_SIM_KERNEL_LAG)
  return ptds ? surface({per_thread_stream(), &S().legacy}) : surface_all();
}

CUresult copy_sync(CUdeviceptr dst, CUdeviceptr src, size_t n, bool dst_dev, bool src_dev, bool ptds) {
  std::lock_guard<std::mutex> lk(S().mu);
  if (CUresult r = sync_copy_prologue()) return r;
  if (n == 0) return CUDA_SUCCESS;
  if (dst_dev && !is_device_accessible(dst, n)) return CUDA_ERROR_INVALID_VALUE;
  if (src_dev && !is_device_accessible(src, n)) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = sync_copy_wait(ptds)) return r;
  std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), n);
  return CUDA_SUCCESS;
}

// cuMemcpy / cuMemcpyAsync infer the direction from the addresses (UVA): a pointer inside a known allocation
// must fit in it; any other pointer is taken as pageable host memory.
bool unified_ok(CUdeviceptr p, size_t n) {
  auto& a = S().allocs;
  auto it = a.upper_bound(static_cast<uintptr_t>(p));
  if (it == a.begin()) return true;
  --it;
  if (p >= it->first + it->second.size) return true;
  return p + n <= it->first + it->second.size;
}

CUresult memcpy_unified(CUdeviceptr d, CUdeviceptr s, size_t n, bool ptds) {
  {
    std::lock_guard<std::mutex> lk(S().mu);
    if (n && S().initialized && (!unified_ok(d, n) || !unified_ok(s, n))) return CUDA_ERROR_INVALID_VALUE;
  }
  return copy_sync(d, s, n, false, false, ptds);
}

CUresult copy_async(CUdeviceptr dst, CUdeviceptr src, size_t n, bool dst_dev, bool src_dev, CUstream hs,
                    bool ptsz) {
  std::lock_guard<std::mutex> lk(S().mu);
  if (CUresult r = require_init()) return r;
  Stream* s = resolve_stream(hs, ptsz);
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  if (CUresult r = sticky_error()) return r;
  if (n && dst_dev && !is_device_accessible(dst, n)) return CUDA_ERROR_INVALID_VALUE;
  if (n && src_dev && !is_device_accessible(src, n)) return CUDA_ERROR_INVALID_VALUE;
  if (!dst_dev && !src_dev && (!unified_ok(dst, n) || !unified_ok(src, n))) return CUDA_ERROR_INVALID_VALUE;
  Graph* rec = nullptr;
  if (CUresult r = route_async(s, &rec, true)) return r;
  Node node;
  node.type = Node::Memcpy;
  node.dst = dst;
  node.src = src;
  node.bytes = n;
  record_or_run(s, rec, node, n != 0);
  return CUDA_SUCCESS;
}

CUresult memset_sync(CUdeviceptr dst, uint32_t value, size_t count, unsigned elem, bool ptds) {
  std::lock_guard<std::mutex> lk(S().mu);
  if (CUresult r = sync_copy_prologue()) return r;
  if (count == 0) return CUDA_SUCCESS;
  if (!is_device_accessible(dst, count * elem) || (elem == 4 && dst % 4)) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = sync_copy_wait(ptds)) return r;
  execute_node(&S().legacy, memset_node(dst, value, count, elem));
  return CUDA_SUCCESS;
}

CUresult memset_async(CUdeviceptr dst, uint32_t value, size_t count, unsigned elem, CUstream hs, bool ptsz) {
  std::lock_guard<std::mutex> lk(S().mu);
  if (CUresult r = require_init()) return r;
  Stream* s = resolve_stream(hs, ptsz);
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  if (CUresult r = sticky_error()) return r;
  if (count && (!is_device_accessible(dst, count * elem) || (elem == 4 && dst % 4)))
    return CUDA_ERROR_INVALID_VALUE;
  Graph* rec = nullptr;
  if (CUresult r = route_async(s, &rec, true)) return r;
  record_or_run(s, rec, memset_node(dst, value, count, elem), count != 0);
  return CUDA_SUCCESS;
}

// CUDA_SIM_QUERY_NOT_READY=1 (read once): stream queries answer "not ready" until the next synchronize.
bool queries_not_ready() {
  static const bool set = env_switch("CUDA_SIM_QUERY_NOT_READY");
  return set;
}

CUresult stream_sync_locked(CUstream hs, bool ptsz, bool is_query) {
  State& st = S();
  if (!is_query) st.stats.synchronizes++;
  if (CUresult r = require_init()) return r;
  Stream* s = resolve_stream(hs, ptsz);
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  if (capturing(s)) {  // waiting on a capturing stream is never allowed, whatever the mode
    invalidate(s);
    st.stats.synchronizes_during_capture++;
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  if (CUresult r = check_unsafe_call()) return r;
  if (s->legacy) {
    // The legacy stream cannot wait on a capturing blocking stream.
    if (CUresult r = check_legacy_implicit(s, true)) return r;
  }
  if (CUresult r = sticky_error()) return r;
  if (s->legacy)  // the wait lets every kernel still running complete (CUDA_SIM_KERNEL_LAG)
    complete_all_running();
  else
    complete_running(s);
  CUresult result = s->legacy ? surface_all() : surface({s});  // work "completes" at once
  if (result == CUDA_SUCCESS && is_query && queries_not_ready() && st.unsynchronized_launches > 0)
    return CUDA_ERROR_NOT_READY;
  return result;
}

CUresult stream_sync(CUstream hs, bool ptsz, bool is_query) {
  std::lock_guard<std::mutex> lk(S().mu);
  State& st = S();
  CUresult result = stream_sync_locked(hs, ptsz, is_query);
  if (is_query) {
    st.stats.stream_queries++;
    if (result == CUDA_SUCCESS) st.stats.stream_queries_done++;
  } else if (result == CUDA_SUCCESS) {
    st.unsynchronized_launches = 0;
  }
  return result;
}

CUresult write_value64(CUstream hs, CUdeviceptr addr, cuuint64_t value, unsigned flags, bool ptsz) {
  std::lock_guard<std::mutex> lk(S().mu);
  if (CUresult r = require_init()) return r;
  if (no_stream_mem_ops()) return CUDA_ERROR_NOT_SUPPORTED;
  Stream* s = resolve_stream(hs, ptsz);
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  if (flags & ~static_cast<unsigned>(CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER))
    return CUDA_ERROR_INVALID_VALUE;
  if (addr % 8) return CUDA_ERROR_INVALID_VALUE;
  Graph* rec = nullptr;
  // Enqueued behind a fault that may still be running: never surfaces it (it just never writes).
  if (CUresult r = route_async(s, &rec, false)) return r;
  Node node;
  node.type = Node::WriteValue64;
  node.dst = addr;
  node.value = value;
  S().stats.stream_writes++;
  record_or_run(s, rec, node, true);
  return CUDA_SUCCESS;
}

CUresult launch_host_func(CUstream hs, CUhostFn fn, void* user, bool ptsz) {
  std::unique_lock<std::mutex> lk(S().mu);
  if (CUresult r = require_init()) return r;
  if (!fn) return CUDA_ERROR_INVALID_VALUE;
  Stream* s = resolve_stream(hs, ptsz);
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  Graph* rec = nullptr;
  if (CUresult r = route_async(s, &rec, true)) return r;
  if (rec) {
    auto n = std::make_unique<Node>();
    n->type = Node::HostFunc;
    n->fn = fn;
    n->user = user;
    rec->nodes.push_back(std::move(n));
    return CUDA_SUCCESS;
  }
  if (queued_behind(s)) return CUDA_SUCCESS;  // the stream is broken: the callback never runs
  if (s->running_until) {                     // called when the kernel still running before it completes
    Node n;
    n.type = Node::HostFunc;
    n.fn = fn;
    n.user = user;
    s->held.push_back(n);
    return CUDA_SUCCESS;
  }
  lk.unlock();  // the callback may not call CUDA, but must not deadlock the sim if it does
  fn(user);
  return CUDA_SUCCESS;
}

CUresult event_record(CUevent he, CUstream hs, bool ptsz) {
  std::lock_guard<std::mutex> lk(S().mu);
  if (CUresult r = require_init()) return r;
  Event* e = lookup<Event>(he, Kind::Event);
  Stream* s = resolve_stream(hs, ptsz);
  if (!e || !s) return CUDA_ERROR_INVALID_HANDLE;
  if (s->cap.status == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
    e->captured = true;  // becomes an event-record node; we do not replay it
    e->capture_id = s->cap.id;
    return CUDA_SUCCESS;
  }
  if (s->cap.status == CU_STREAM_CAPTURE_STATUS_INVALIDATED) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  if (CUresult r = check_legacy_implicit(s, true)) return r;
  if (S().sticky) return S().sticky;  // never surfaces a pending fault: the event just carries it (below)
  e->captured = false;
  e->recorded = true;
  e->time = std::chrono::steady_clock::now();  // the preceding work has completed (it ran at launch)
  e->fault = queued_behind(s);
  e->held_on = s->running_until ? s : nullptr;
  e->held_run = s->run;
  return CUDA_SUCCESS;
}

// cuStreamWaitEvent[_ptsz]. What the sim models of CUDA's cross-stream capture rules:
// * The event was last recorded into a running (ACTIVE) capture and the waiting stream is not capturing: the
//   stream joins that capture (a fork): it takes the capture's id, graph, mode and owning thread, its status
//   becomes ACTIVE, and the work it queues from then on becomes nodes of the same graph. The graph runs its
//   nodes in the order they were queued, across all the capture's streams: one legal serialization of the
//   branches (dependencies are not modelled). Only the origin stream ends the capture, for all its streams.
// * A stream already in that capture waits on it (a join, e.g. back into the origin): nothing to do.
// * Errors: a capture that was invalidated 901; one that has ended CUDA_ERROR_INVALID_VALUE (as
//   cuEventElapsedTime); the legacy stream cannot join (900); a capturing stream waiting on an event of
//   another running capture 902 (merge), or on one recorded outside any capture without
//   CU_EVENT_WAIT_EXTERNAL 905 (isolation): both invalidate the waiting stream's capture.
//   CU_EVENT_WAIT_EXTERNAL in a capture is accepted as an (unreplayed) external wait node; outside a capture
//   it is CUDA_ERROR_INVALID_VALUE.
// * Outside capture the sim has already run the work before the event, so the wait orders nothing; it returns
//   the sticky error if there is one (else success), and the waiting stream inherits the event's pending
//   fault (work before the event faulted and nothing has waited for it yet): its later work never runs, and
//   waiting on it surfaces the fault.
CUresult stream_wait_event(CUstream hs, CUevent he, unsigned flags, bool ptsz) {
  std::lock_guard<std::mutex> lk(S().mu);
  if (CUresult r = require_init()) return r;
  Stream* s = resolve_stream(hs, ptsz);
  Event* e = lookup<Event>(he, Kind::Event);
  if (!s || !e) return CUDA_ERROR_INVALID_HANDLE;
  if (flags & ~static_cast<unsigned>(CU_EVENT_WAIT_EXTERNAL)) return CUDA_ERROR_INVALID_VALUE;
  const bool external = (flags & CU_EVENT_WAIT_EXTERNAL) != 0;
  if (s->cap.status == CU_STREAM_CAPTURE_STATUS_INVALIDATED) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  if (s->cap.status == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
    if (external) return CUDA_SUCCESS;                                   // an external event wait node
    if (e->captured && e->capture_id == s->cap.id) return CUDA_SUCCESS;  // within the capture: a join
    const bool merge = e->captured && capture_origin(e->capture_id);
    invalidate(s);
    return merge ? CUDA_ERROR_STREAM_CAPTURE_MERGE : CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
  }
  if (external) return CUDA_ERROR_INVALID_VALUE;  // only valid during a capture
  if (CUresult r = check_legacy_implicit(s, true)) return r;
  if (CUresult r = sticky_error()) return r;
  if (e->captured) {
    Stream* origin = capture_origin(e->capture_id);
    if (!origin) return CUDA_ERROR_INVALID_VALUE;  // that capture has ended
    if (origin->cap.status == CU_STREAM_CAPTURE_STATUS_INVALIDATED)
      return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    if (s->legacy) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;  // the legacy stream cannot be captured
    s->cap = origin->cap;  // the fork: same id, graph, mode, thread; ACTIVE
    s->cap.joined = true;
    return CUDA_SUCCESS;
  }
  if (e->fault && !s->fault) s->fault = e->fault;  // the stream now waits behind the faulting work
  return CUDA_SUCCESS;
}

bool capture_running(uint64_t id) {
  for (const Stream* s : S().streams)
    if (capturing(s) && s->cap.id == id) return true;
  return false;
}

// cuEventElapsedTime[_v2]. Checks and error-log texts as measured on an H200 (driver 580); both entry points
// log as "cuEventElapsedTime_v2", as the real driver does.
CUresult event_elapsed(float* ms, CUevent hstart, CUevent hend) {
  ApiLog log("cuEventElapsedTime_v2");  // declared before the lock: delivered after it is released
  std::lock_guard<std::mutex> lk(S().mu);
  if (CUresult r = require_init()) return log.ret(r);
  if (CUresult r = sticky_error()) return log.ret(r, kStickyText);
  if (!ms) return log.ret(CUDA_ERROR_INVALID_HANDLE);  // sic: not CUDA_ERROR_INVALID_VALUE
  if (!hstart || !hend) return log.ret(CUDA_ERROR_INVALID_HANDLE, "Event handle is NULL");
  Event* ev[2] = {lookup<Event>(hstart, Kind::Event), lookup<Event>(hend, Kind::Event)};
  for (const Event* e : ev) {  // start first, then end
    if (!e) return log.ret(CUDA_ERROR_INVALID_HANDLE);
    if (e->captured) {
      if (capture_running(e->capture_id))
        return log.ret(CUDA_ERROR_CAPTURED_EVENT, "Recorded event not allowed on stream");
      return log.ret(CUDA_ERROR_INVALID_VALUE,
                     "Event is not valid. This can be related to a graph capture that is no longer running");
    }
    // Never recorded, or created with CU_EVENT_DISABLE_TIMING.
    if (!e->recorded || (e->flags & CU_EVENT_DISABLE_TIMING)) return log.ret(CUDA_ERROR_INVALID_HANDLE);
  }
  // An event behind a fault never completes; like cuEventQuery, this reveals the fault (on hardware the
  // context is already dead: the call returns the fault as a sticky error).
  for (const Event* e : ev) complete_for_event(e);
  Fault f;
  for (const Event* e : ev)
    if (e->fault && (!f || e->fault.seq < f.seq)) f = e->fault;
  if (f) return log.ret(make_sticky(f), kStickyText);
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(ev[1]->time - ev[0]->time).count();
  *ms = static_cast<float>(static_cast<double>(ns) / 1e6);  // negative when the end was recorded first
  return CUDA_SUCCESS;
}

CUresult begin_capture(CUstream hs, CUstreamCaptureMode mode, bool ptsz) {
  std::lock_guard<std::mutex> lk(S().mu);
  if (CUresult r = require_init()) return r;
  Stream* s = resolve_stream(hs, ptsz);
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
      mode != CU_STREAM_CAPTURE_MODE_RELAXED)
    return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = sticky_error()) return r;
  if (s->legacy) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;  // the legacy stream cannot be captured
  if (capturing(s)) return CUDA_ERROR_ILLEGAL_STATE;
  auto* g = new Graph;
  S().objects[g] = Kind::Graph;
  s->cap.status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  s->cap.mode = mode;
  s->cap.thread = std::this_thread::get_id();
  s->cap.graph = g;
  s->cap.id = ++S().capture_ids;
  return CUDA_SUCCESS;
}

CUresult end_capture(CUstream hs, CUgraph* out, bool ptsz) {
  std::lock_guard<std::mutex> lk(S().mu);
  if (CUresult r = require_init()) return r;
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  Stream* s = resolve_stream(hs, ptsz);
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  if (!capturing(s)) return CUDA_ERROR_ILLEGAL_STATE;
  // Only the origin stream ends a capture (the sim leaves the capture as it is).
  if (s->cap.joined) return CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
  if (s->cap.mode != CU_STREAM_CAPTURE_MODE_RELAXED && s->cap.thread != std::this_thread::get_id())
    return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
  Graph* g = s->cap.graph;
  const bool invalid = s->cap.status == CU_STREAM_CAPTURE_STATUS_INVALIDATED;
  // A dead context (next-call mode) makes no graph; the capture still ends, so that the stream's later calls
  // report the sticky error rather than capture errors.
  const CUresult dead = next_call_error();
  release_joined(s->cap.id);  // the joined streams' work is in g; they are no longer capturing
  s->cap = Capture{};
  if (invalid || dead) {
    S().objects.erase(g);
    delete g;
    *out = nullptr;
    return dead ? dead : CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  }
  *out = reinterpret_cast<CUgraph>(g);
  return CUDA_SUCCESS;
}

CUresult is_capturing(CUstream hs, CUstreamCaptureStatus* st, bool ptsz) {
  std::lock_guard<std::mutex> lk(S().mu);
  S().stats.capture_state_queries++;
  if (CUresult r = require_init()) return r;
  if (!st) return CUDA_ERROR_INVALID_VALUE;
  Stream* s = resolve_stream(hs, ptsz);
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  if (S().sticky) return S().sticky;  // a capture-state query never surfaces a pending fault
  if (CUresult r = check_legacy_implicit(s, false))
    return r;  // asking about the legacy stream is itself implicit
  *st = s->cap.status;
  return CUDA_SUCCESS;
}

CUresult capture_info(CUstream hs, CUstreamCaptureStatus* st, cuuint64_t* id, CUgraph* graph,
                      const CUgraphNode** deps, const CUgraphEdgeData** edges, size_t* ndeps, bool ptsz) {
  std::lock_guard<std::mutex> lk(S().mu);
  if (CUresult r = require_init()) return r;
  if (!st) return CUDA_ERROR_INVALID_VALUE;
  Stream* s = resolve_stream(hs, ptsz);
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  if (S().sticky) return S().sticky;  // as cuStreamIsCapturing: never surfaces a pending fault
  if (CUresult r = check_legacy_implicit(s, false)) return r;
  *st = s->cap.status;
  const bool active = capturing(s);
  if (id && active) *id = s->cap.id;
  if (graph) *graph = active ? reinterpret_cast<CUgraph>(s->cap.graph) : nullptr;
  if (deps) *deps = nullptr;  // dependency tracking is not modelled
  if (edges) *edges = nullptr;
  if (ndeps) *ndeps = 0;
  return CUDA_SUCCESS;
}

CUresult graph_launch(CUgraphExec he, CUstream hs, bool ptsz) {
  std::unique_lock<std::mutex> lk(S().mu);
  if (CUresult r = require_init()) return r;
  GraphExec* ge = lookup<GraphExec>(he, Kind::GraphExec);
  Stream* s = resolve_stream(hs, ptsz);
  if (!ge || !s) return CUDA_ERROR_INVALID_HANDLE;
  Graph* rec = nullptr;
  if (CUresult r = route_async(s, &rec, true)) return r;
  if (rec) {  // launching a graph into a capture: the nodes become part of the new graph
    for (const Node& n : ge->nodes) rec->nodes.push_back(std::make_unique<Node>(n));
    return CUDA_SUCCESS;
  }
  complete_running(s);  // the graph runs after the stream's kernel still running (CUDA_SIM_KERNEL_LAG)
  for (const Node& n : ge->nodes) {
    if (n.type == Node::HostFunc) {
      if (queued_behind(s)) continue;
      // Run host nodes in order without the lock.
      lk.unlock();
      n.fn(n.user);
      lk.lock();
      continue;
    }
    if (n.type == Node::KernelLaunch) {
      if (const unsigned long us = execute_kernel(s, n.name, n.ptrs)) {
        lk.unlock();  // the replayed kernel takes its CUDA_SIM_KERNEL_US time, like a launch
        busy_wait(us);
        lk.lock();
      }
      continue;
    }
    execute_node(s, n);
  }
  return CUDA_SUCCESS;
}

// ---------------------------------------------------------------------------------------------------------------
// Error strings: the driver's own texts (cuGetErrorName / cuGetErrorString).
// ---------------------------------------------------------------------------------------------------------------
struct ErrText {
  CUresult code;
  const char* name;
  const char* text;
};
const ErrText kErrors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_SYSTEM_NOT_READY, "CUDA_ERROR_SYSTEM_NOT_READY", "system not yet initialized"},
    {CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
     "system has unsupported display driver / cuda driver combination"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_NO_BINARY_FOR_GPU, "CUDA_ERROR_NO_BINARY_FOR_GPU",
     "no kernel image is available for execution on the device"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_ILLEGAL_STATE, "CUDA_ERROR_ILLEGAL_STATE",
     "the operation cannot be performed in the present state"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
     "too many resources requested for launch"},
    {CUDA_ERROR_LAUNCH_TIMEOUT, "CUDA_ERROR_LAUNCH_TIMEOUT", "the launch timed out and was terminated"},
    {CUDA_ERROR_ASSERT, "CUDA_ERROR_ASSERT", "device-side assert triggered"},
    {CUDA_ERROR_HARDWARE_STACK_ERROR, "CUDA_ERROR_HARDWARE_STACK_ERROR", "hardware stack error"},
    {CUDA_ERROR_ILLEGAL_INSTRUCTION, "CUDA_ERROR_ILLEGAL_INSTRUCTION",
     "an illegal instruction was encountered"},
    {CUDA_ERROR_MISALIGNED_ADDRESS, "CUDA_ERROR_MISALIGNED_ADDRESS", "misaligned address"},
    {CUDA_ERROR_INVALID_ADDRESS_SPACE, "CUDA_ERROR_INVALID_ADDRESS_SPACE",
     "operation not supported on global/shared address space"},
    {CUDA_ERROR_INVALID_PC, "CUDA_ERROR_INVALID_PC", "invalid program counter"},
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE",
     "too many blocks in cooperative launch"},
    {CUDA_ERROR_NOT_PERMITTED, "CUDA_ERROR_NOT_PERMITTED", "operation not permitted"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
     "operation not permitted when stream is capturing"},
    {CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
     "operation failed due to a previous error during capture"},
    {CUDA_ERROR_STREAM_CAPTURE_MERGE, "CUDA_ERROR_STREAM_CAPTURE_MERGE",
     "operation would result in a merge of separate capture sequences"},
    {CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED",
     "capture was not ended in the same stream as it began"},
    {CUDA_ERROR_STREAM_CAPTURE_UNJOINED, "CUDA_ERROR_STREAM_CAPTURE_UNJOINED",
     "capturing stream has unjoined work"},
    {CUDA_ERROR_STREAM_CAPTURE_ISOLATION, "CUDA_ERROR_STREAM_CAPTURE_ISOLATION",
     "dependency created on uncaptured work in another stream"},
    {CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT",
     "operation would make the legacy stream depend on a capturing blocking stream"},
    {CUDA_ERROR_CAPTURED_EVENT, "CUDA_ERROR_CAPTURED_EVENT",
     "operation not permitted on an event last recorded in a capturing stream"},
    {CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD",
     "attempt to terminate a thread-local capture sequence from another thread"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

const char* error_name(CUresult r) {
  for (const ErrText& e : kErrors)
    if (e.code == r) return e.name;
  return "CUDA_ERROR_UNKNOWN";
}

void write_stats_file() {
  const char* path = std::getenv("CUDA_SIM_STATS");
  if (!path || !*path) return;
  Stats st;
  CUresult sticky;
  {
    std::lock_guard<std::mutex> lk(S().mu);
    st = S().stats;
    sticky = S().sticky;
  }
  FILE* f = std::fopen(path, "w");
  if (!f) return;
  std::fprintf(f,
               "launches=%lu\nsynchronizes=%lu\nsynchronizes_during_capture=%lu\ncaptures_invalidated=%lu\n"
               "faults_injected=%lu\nfaults_surfaced=%lu\nsticky_error=%d\ncapture_state_queries=%lu\n"
               "capture_mode_exchanges=%lu\nstream_queries=%lu\nstream_queries_done=%lu\nstream_writes=%lu\n",
               st.launches, st.synchronizes, st.synchronizes_during_capture, st.captures_invalidated,
               st.faults_injected, st.faults_surfaced, static_cast<int>(sticky), st.capture_state_queries,
               st.capture_mode_exchanges, st.stream_queries, st.stream_queries_done, st.stream_writes);
  std::fclose(f);
}

__attribute__((destructor)) void write_stats_at_exit() {
  write_stats_file();
}

// Parses the sim's own image format: "SIMIMG1 ptrparams=0,1,2". Any other image (a real fatbin from nvcc, a
// test's dummy) is accepted as is, with no parameter checking; the sim cannot run real device code anyway.
PtrParams parse_image(const void* image) {
  PtrParams pp;
  const char* s = static_cast<const char*>(image);
  if (std::strncmp(s, "SIMIMG1", 7) != 0) return pp;
  const char* p = std::strstr(s, "ptrparams=");
  if (!p) return pp;
  p += 10;
  while (*p >= '0' && *p <= '9') {
    pp.push_back(static_cast<int>(std::strtol(p, const_cast<char**>(&p), 10)));
    if (*p == ',') ++p;
  }
  return pp;
}

}  // namespace

// =================================================================================================================
// Exported driver API
// =================================================================================================================

SIM_API void simWriteStats(void) {
  write_stats_file();
}

SIM_API CUresult cuInit(unsigned int flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = init_error()) return r;
  std::lock_guard<std::mutex> lk(S().mu);
  S().initialized = true;
  parse_fault_specs();
  parse_kernel_times();
  return CUDA_SUCCESS;
}

SIM_API CUresult cuDriverGetVersion(int* v) {
  if (!v) return CUDA_ERROR_INVALID_VALUE;
  *v = driver_version();
  return CUDA_SUCCESS;
}

SIM_API CUresult cuDeviceGetCount(int* n) {
  std::lock_guard<std::mutex> lk(S().mu);
  if (CUresult r = require_init()) return r;
  if (!n) return CUDA_ERROR_INVALID_VALUE;
  *n = 1;
  return CUDA_SUCCESS;
}

SIM_API CUresult cuDeviceGet(CUdevice* d, int ordinal) {
  std::lock_guard<std::mutex> lk(S().mu);
  if (CUresult r = require_init()) return r;
  if (!d) return CUDA_ERROR_INVALID_VALUE;
  if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
  *d = 0;
  return CUDA_SUCCESS;
}

SIM_API CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  std::lock_guard<std::mutex> lk(S().mu);
  if (CUresult r = require_init()) return r;
  if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
  std::snprintf(name, static_cast<size_t>(len), "%s", "Simulated CUDA device (cuda-blockrun test double)");
  return CUDA_SUCCESS;
}

SIM_API CUresult cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev) {
  std::lock_guard<std::mutex> lk(S().mu);
  if (CUresult r = require_init()) return r;
  if (!pi) return CUDA_ERROR_INVALID_VALUE;
  if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
  if (attrib <= 0 || attrib >= CU_DEVICE_ATTRIBUTE_MAX) return CUDA_ERROR_INVALID_VALUE;
  switch (attrib) {  // an H200 (sm_90, 132 SMs); unlisted attributes read 0
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *pi = 1024;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
      *pi = 1024;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y:
      *pi = 1024;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z:
      *pi = 64;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X:
      *pi = 2147483647;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
      *pi = 65535;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z:
      *pi = 65535;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
      *pi = 49152;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
      *pi = 232448;
      break;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY:
      *pi = 65536;
      break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
      *pi = 32;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK:
      *pi = 65536;
      break;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE:
      *pi = 1980000;
      break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      *pi = 132;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
      *pi = 2048;
      break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      *pi = 9;
      break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      *pi = 0;
      break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
      *pi = 1;
      break;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
      *pi = 1;
      break;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS:
      *pi = 1;
      break;
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH:
      *pi = 1;
      break;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS:
      *pi = no_stream_mem_ops() ? 0 : 1;
      break;
    case CU_DEVICE_ATTRIBUTE_ECC_ENABLED:
      *pi = 1;
      break;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT:
      *pi = 3;
      break;
    default:
      *pi = 0;
      break;
  }
  return CUDA_SUCCESS;
}

SIM_API CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  std::lock_guard<std::mutex> lk(S().mu);
  if (CUresult r = require_init()) return r;
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
  S().primary_ctx_refs++;
  *pctx = reinterpret_cast<CUcontext>(&g_primary_ctx);
  return CUDA_SUCCESS;
}

SIM_API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  std::lock_guard<std::mutex> lk(S().mu);
  if (CUresult r = require_init()) return r;
  if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
  if (S().primary_ctx_refs > 0) S().primary_ctx_refs--;
  return CUDA_SUCCESS;
}

SIM_API CUresult cuCtxGetCurrent(CUcontext* pctx) {
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lk(S().mu);
  if (CUresult r = require_init()) return r;
  *pctx = t_current_ctx;
  return CUDA_SUCCESS;
}

SIM_API CUresult cuCtxSetCurrent(CUcontext ctx) {
  std::lock_guard<std::mutex> lk(S().mu);
  if (CUresult r = require_init()) return r;
  if (ctx && ctx != reinterpret_cast<CUcontext>(&g_primary_ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  t_current_ctx = ctx;
  return CUDA_SUCCESS;
}

SIM_API CUresult cuCtxGetDevice(CUdevice* d) {
  std::lock_guard<std::mutex> lk(S().mu);
  if (CUresult r = require_init()) return r;
  if (!d) return CUDA_ERROR_INVALID_VALUE;
  *d = 0;
  return CUDA_SUCCESS;
}

SIM_API CUresult cuCtxSynchronize(void) {
  std::lock_guard<std::mutex> lk(S().mu);
  S().stats.synchronizes++;
  if (CUresult r = require_init()) return r;
  if (CUresult r = check_unsafe_call()) return r;
  if (CUresult r = sticky_error()) return r;
  complete_all_running();
  CUresult result = surface_all();
  if (result == CUDA_SUCCESS) S().unsynchronized_launches = 0;
  return result;
}

// --- streams
// ------------------------------------------------------------------------------------------------------

SIM_API CUresult cuStreamCreate(CUstream* ph, unsigned int flags) {
  std::lock_guard<std::mutex> lk(S().mu);
  if (CUresult r = require_init()) return r;
  if (!ph || (flags & ~static_cast<unsigned>(CU_STREAM_NON_BLOCKING))) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = sticky_error()) return r;
  auto* s = new Stream;
  s->flags = flags;
  S().streams.insert(s);
  S().objects[s] = Kind::Stream;
  *ph = reinterpret_cast<CUstream>(s);
  return CUDA_SUCCESS;
}

SIM_API CUresult cuStreamDestroy_v2(CUstream h) {
  std::lock_guard<std::mutex> lk(S().mu);
  if (CUresult r = require_init()) return r;
  Stream* s = lookup<Stream>(h, Kind::Stream);
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  if (CUresult r = next_call_error()) return r;
  complete_running(s);  // the work of a destroyed stream still completes
  // A fault queued on the stream still happens on the device: keep it for device-wide waits.
  if (s->fault && (!S().orphan || s->fault.seq < S().orphan.seq)) S().orphan = s->fault;
  if (s->cap.graph && !s->cap.joined) {  // the origin of a capture: the capture goes with it
    release_joined(s->cap.id);
    S().objects.erase(s->cap.graph);
    delete s->cap.graph;
  }
  S().streams.erase(s);
  S().objects.erase(s);
  delete s;
  return CUDA_SUCCESS;
}

SIM_API CUresult cuStreamGetFlags(CUstream h, unsigned int* flags) {
  std::lock_guard<std::mutex> lk(S().mu);
  if (CUresult r = require_init()) return r;
  Stream* s = resolve_stream(h, false);
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  if (!flags) return CUDA_ERROR_INVALID_VALUE;
  *flags = s->flags;
  return CUDA_SUCCESS;
}

// --- events
// -------------------------------------------------------------------------------------------------------

SIM_API CUresult cuEventCreate(CUevent* ph, unsigned int flags) {
  std::lock_guard<std::mutex> lk(S().mu);
  if (CUresult r = require_init()) return r;
  if (!ph) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = sticky_error()) return r;
  auto* e = new Event;
  e->flags = flags;
  S().objects[e] = Kind::Event;
  *ph = reinterpret_cast<CUevent>(e);
  return CUDA_SUCCESS;
}

SIM_API CUresult cuEventSynchronize(CUevent he) {
  std::lock_guard<std::mutex> lk(S().mu);
  S().stats.synchronizes++;
  if (CUresult r = require_init()) return r;
  Event* e = lookup<Event>(he, Kind::Event);
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  if (CUresult r = check_unsafe_call()) return r;
  if (e->captured) return CUDA_ERROR_CAPTURED_EVENT;
  if (CUresult r = sticky_error()) return r;
  complete_for_event(e);
  return e->fault ? make_sticky(e->fault) : CUDA_SUCCESS;
}

SIM_API CUresult cuEventQuery(CUevent he) {
  std::lock_guard<std::mutex> lk(S().mu);
  if (CUresult r = require_init()) return r;
  Event* e = lookup<Event>(he, Kind::Event);
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  if (e->captured) return CUDA_ERROR_CAPTURED_EVENT;
  if (CUresult r = sticky_error()) return r;
  complete_for_event(e);
  return e->fault ? make_sticky(e->fault) : CUDA_SUCCESS;
}

SIM_API CUresult cuEventDestroy_v2(CUevent he) {
  std::lock_guard<std::mutex> lk(S().mu);
  if (CUresult r = require_init()) return r;
  Event* e = lookup<Event>(he, Kind::Event);
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  S().objects.erase(e);
  delete e;
  return CUDA_SUCCESS;
}

// --- memory
// -------------------------------------------------------------------------------------------------------

SIM_API CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytes) {
  std::lock_guard<std::mutex> lk(S().mu);
  if (CUresult r = require_init()) return r;
  if (CUresult r = check_unsafe_call()) return r;
  if (CUresult r = sticky_error()) return r;
  if (!dptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  const size_t rounded = (bytes + 255) / 256 * 256;  // device allocations are 256-byte aligned
  void* p = std::aligned_alloc(256, rounded);
  if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
  std::memset(p, 0, rounded);
  S().allocs[reinterpret_cast<uintptr_t>(p)] = Alloc{bytes, false};
  *dptr = reinterpret_cast<CUdeviceptr>(p);
  return CUDA_SUCCESS;
}

SIM_API CUresult cuMemFree_v2(CUdeviceptr dptr) {
  std::lock_guard<std::mutex> lk(S().mu);
  if (CUresult r = require_init()) return r;
  if (CUresult r = sticky_error()) return r;
  auto it = S().allocs.find(static_cast<uintptr_t>(dptr));
  if (it == S().allocs.end() || it->second.host) return CUDA_ERROR_INVALID_VALUE;
  S().allocs.erase(it);
  std::free(reinterpret_cast<void*>(dptr));
  return CUDA_SUCCESS;
}

SIM_API CUresult cuMemHostAlloc(void** pp, size_t bytes, unsigned int flags) {
  std::lock_guard<std::mutex> lk(S().mu);
  if (CUresult r = require_init()) return r;
  if (CUresult r = check_unsafe_call()) return r;  // pinning memory is unsafe during a capture
  if (CUresult r = sticky_error()) return r;
  if (!pp || bytes == 0 || (flags & ~0x7u)) return CUDA_ERROR_INVALID_VALUE;
  void* p = std::calloc(1, bytes);
  if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
  S().allocs[reinterpret_cast<uintptr_t>(p)] = Alloc{bytes, true};
  *pp = p;
  return CUDA_SUCCESS;
}

SIM_API CUresult cuMemFreeHost(void* p) {
  std::lock_guard<std::mutex> lk(S().mu);
  if (CUresult r = require_init()) return r;
  if (CUresult r = sticky_error()) return r;
  auto it = S().allocs.find(reinterpret_cast<uintptr_t>(p));
  if (it == S().allocs.end() || !it->second.host) return CUDA_ERROR_INVALID_VALUE;
  S().allocs.erase(it);
  std::free(p);
  return CUDA_SUCCESS;
}

SIM_API CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr* pd, void* p, unsigned int flags) {
  std::lock_guard<std::mutex> lk(S().mu);
  if (CUresult r = require_init()) return r;
  if (!pd || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  const Alloc* a = find_alloc(reinterpret_cast<uintptr_t>(p), 1);
  if (!a || !a->host) return CUDA_ERROR_INVALID_VALUE;
  *pd = reinterpret_cast<CUdeviceptr>(p);  // unified addressing: the device sees the same address
  return CUDA_SUCCESS;
}

// --- stream capture and graphs
// --------------------------------------------------------------------------------------

SIM_API CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  if (!mode) return CUDA_ERROR_INVALID_VALUE;
  const CUstreamCaptureMode m = *mode;
  if (m != CU_STREAM_CAPTURE_MODE_GLOBAL && m != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
      m != CU_STREAM_CAPTURE_MODE_RELAXED)
    return CUDA_ERROR_INVALID_VALUE;
  *mode = t_capture_mode;
  t_capture_mode = m;
  std::lock_guard<std::mutex> lk(S().mu);
  S().stats.capture_mode_exchanges++;
  return CUDA_SUCCESS;
}

// Graphs built node by node: an empty graph, and kernel nodes appended in order (the simulated graph runs its
// nodes in the order they were added; dependencies are not modelled).
SIM_API CUresult cuGraphCreate(CUgraph* pg, unsigned int flags) {
  std::lock_guard<std::mutex> lk(S().mu);
  if (CUresult r = require_init()) return r;
  if (!pg || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  auto* g = new Graph;
  S().objects[g] = Kind::Graph;
  *pg = reinterpret_cast<CUgraph>(g);
  return CUDA_SUCCESS;
}

SIM_API CUresult cuGraphAddKernelNode_v2(CUgraphNode* node, CUgraph hg, const CUgraphNode* /*dependencies*/,
                                         size_t /*count*/, const CUDA_KERNEL_NODE_PARAMS* p) {
  std::lock_guard<std::mutex> lk(S().mu);
  if (CUresult r = require_init()) return r;
  Graph* g = lookup<Graph>(hg, Kind::Graph);
  if (!g || !node || !p) return CUDA_ERROR_INVALID_VALUE;
  std::string name;
  const PtrParams* pp = nullptr;
  CUfunction f = p->func ? p->func : reinterpret_cast<CUfunction>(p->kern);
  if (!resolve_launchable(f, &name, &pp)) return CUDA_ERROR_INVALID_HANDLE;
  std::string why;
  if (CUresult r = check_dims(p->gridDimX, p->gridDimY, p->gridDimZ, p->blockDimX, p->blockDimY, p->blockDimZ,
                              p->sharedMemBytes, &why))
    return r;
  auto n = std::make_unique<Node>();
  n->type = Node::KernelLaunch;
  n->name = name;
  if (p->kernelParams)
    for (int i : *pp) n->ptrs.push_back(*static_cast<const uint64_t*>(p->kernelParams[i]));
  *node = reinterpret_cast<CUgraphNode>(n.get());
  g->nodes.push_back(std::move(n));
  return CUDA_SUCCESS;
}

SIM_API CUresult cuGraphInstantiateWithFlags(CUgraphExec* pe, CUgraph hg, unsigned long long /*flags*/) {
  std::lock_guard<std::mutex> lk(S().mu);
  if (CUresult r = require_init()) return r;
  if (!pe) return CUDA_ERROR_INVALID_VALUE;
  Graph* g = lookup<Graph>(hg, Kind::Graph);
  if (!g) return CUDA_ERROR_INVALID_HANDLE;
  if (CUresult r = sticky_error()) return r;
  auto* e = new GraphExec;
  for (const auto& n : g->nodes) e->nodes.push_back(*n);
  S().objects[e] = Kind::GraphExec;
  *pe = reinterpret_cast<CUgraphExec>(e);
  return CUDA_SUCCESS;
}

SIM_API CUresult cuGraphDestroy(CUgraph hg) {
  std::lock_guard<std::mutex> lk(S().mu);
  Graph* g = lookup<Graph>(hg, Kind::Graph);
  if (!g) return CUDA_ERROR_INVALID_VALUE;
  S().objects.erase(g);
  delete g;
  return CUDA_SUCCESS;
}

SIM_API CUresult cuGraphExecDestroy(CUgraphExec he) {
  std::lock_guard<std::mutex> lk(S().mu);
  GraphExec* e = lookup<GraphExec>(he, Kind::GraphExec);
  if (!e) return CUDA_ERROR_INVALID_VALUE;
  S().objects.erase(e);
  delete e;
  return CUDA_SUCCESS;
}

SIM_API CUresult cuGraphGetNodes(CUgraph hg, CUgraphNode* nodes, size_t* num) {
  std::lock_guard<std::mutex> lk(S().mu);
  Graph* g = lookup<Graph>(hg, Kind::Graph);
  if (!g || !num) return CUDA_ERROR_INVALID_VALUE;
  if (!nodes) {
    *num = g->nodes.size();
    return CUDA_SUCCESS;
  }
  const size_t n = std::min(*num, g->nodes.size());
  for (size_t i = 0; i < n; ++i) nodes[i] = reinterpret_cast<CUgraphNode>(g->nodes[i].get());
  *num = n;
  return CUDA_SUCCESS;
}

// --- modules, libraries, kernels, names
// -----------------------------------------------------------------------------

SIM_API CUresult cuLibraryLoadData(CUlibrary* lib, const void* code, CUjit_option*, void**, unsigned int,
                                   CUlibraryOption*, void**, unsigned int) {
  std::lock_guard<std::mutex> lk(S().mu);
  if (CUresult r = require_init()) return r;
  if (!lib || !code) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = sticky_error()) return r;
  auto* l = new Library;
  l->ptr_params = parse_image(code);
  S().objects[l] = Kind::Library;
  *lib = reinterpret_cast<CUlibrary>(l);
  return CUDA_SUCCESS;
}

SIM_API CUresult cuLibraryUnload(CUlibrary hl) {
  std::lock_guard<std::mutex> lk(S().mu);
  Library* l = lookup<Library>(hl, Kind::Library);
  if (!l) return CUDA_ERROR_INVALID_HANDLE;
  if (CUresult r = next_call_error()) return r;
  for (auto& kv : l->kernels) {
    if (kv.second->func) {
      S().objects.erase(kv.second->func);
      delete kv.second->func;
    }
    S().objects.erase(kv.second);
    delete kv.second;
  }
  S().objects.erase(l);
  delete l;
  return CUDA_SUCCESS;
}

// Any name is found: the sim cannot read the real fatbin, so it trusts the caller (real:
// CUDA_ERROR_NOT_FOUND).
SIM_API CUresult cuLibraryGetKernel(CUkernel* pk, CUlibrary hl, const char* name) {
  std::lock_guard<std::mutex> lk(S().mu);
  if (CUresult r = require_init()) return r;
  if (!pk || !name) return CUDA_ERROR_INVALID_VALUE;
  Library* l = lookup<Library>(hl, Kind::Library);
  if (!l) return CUDA_ERROR_INVALID_HANDLE;
  Kernel*& k = l->kernels[name];
  if (!k) {
    k = new Kernel;
    k->name = name;
    k->ptr_params = l->ptr_params;
    S().objects[k] = Kind::Kernel;
  }
  *pk = reinterpret_cast<CUkernel>(k);
  return CUDA_SUCCESS;
}

SIM_API CUresult cuKernelGetFunction(CUfunction* pf, CUkernel hk) {
  std::lock_guard<std::mutex> lk(S().mu);
  if (CUresult r = require_init()) return r;
  if (!pf) return CUDA_ERROR_INVALID_VALUE;
  Kernel* k = lookup<Kernel>(hk, Kind::Kernel);
  if (!k) return CUDA_ERROR_INVALID_HANDLE;
  if (!k->func) {
    k->func = new Function;
    k->func->name = k->name;
    k->func->ptr_params = k->ptr_params;
    S().objects[k->func] = Kind::Function;
  }
  *pf = reinterpret_cast<CUfunction>(k->func);
  return CUDA_SUCCESS;
}

SIM_API CUresult cuModuleLoadData(CUmodule* mod, const void* image) {
  std::lock_guard<std::mutex> lk(S().mu);
  if (CUresult r = require_init()) return r;
  if (!mod || !image) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult r = sticky_error()) return r;
  auto* m = new Module;
  m->ptr_params = parse_image(image);
  S().objects[m] = Kind::Module;
  *mod = reinterpret_cast<CUmodule>(m);
  return CUDA_SUCCESS;
}

SIM_API CUresult cuModuleGetFunction(CUfunction* pf, CUmodule hm, const char* name) {
  std::lock_guard<std::mutex> lk(S().mu);
  if (CUresult r = require_init()) return r;
  if (!pf || !name) return CUDA_ERROR_INVALID_VALUE;
  Module* m = lookup<Module>(hm, Kind::Module);
  if (!m) return CUDA_ERROR_INVALID_HANDLE;
  Function*& f = m->funcs[name];
  if (!f) {
    f = new Function;
    f->name = name;
    f->ptr_params = m->ptr_params;
    S().objects[f] = Kind::Function;
  }
  *pf = reinterpret_cast<CUfunction>(f);
  return CUDA_SUCCESS;
}

SIM_API CUresult cuModuleUnload(CUmodule hm) {
  std::lock_guard<std::mutex> lk(S().mu);
  Module* m = lookup<Module>(hm, Kind::Module);
  if (!m) return CUDA_ERROR_INVALID_HANDLE;
  if (CUresult r = next_call_error()) return r;
  for (auto& kv : m->funcs) {
    S().objects.erase(kv.second);
    delete kv.second;
  }
  S().objects.erase(m);
  delete m;
  return CUDA_SUCCESS;
}

// Name queries keep working on a dead context, like on the hardware. Each accepts only its own handle kind.
SIM_API CUresult cuKernelGetName(const char** name, CUkernel hk) {
  std::lock_guard<std::mutex> lk(S().mu);
  if (!name) return CUDA_ERROR_INVALID_VALUE;
  Kernel* k = lookup<Kernel>(hk, Kind::Kernel);
  if (!k) return CUDA_ERROR_INVALID_HANDLE;
  *name = k->name.c_str();
  return CUDA_SUCCESS;
}

SIM_API CUresult cuFuncGetName(const char** name, CUfunction hf) {
  std::lock_guard<std::mutex> lk(S().mu);
  if (!name) return CUDA_ERROR_INVALID_VALUE;
  Function* f = lookup<Function>(hf, Kind::Function);
  if (!f) return CUDA_ERROR_INVALID_HANDLE;
  *name = f->name.c_str();
  return CUDA_SUCCESS;
}

// --- driver error log (CUDA 12.9+)
// -----------------------------------------------------------------------------------

// Work without cuInit. Only the callback interface exists (no cuLogsCurrent / cuLogsDumpTo*).
SIM_API CUresult cuLogsRegisterCallback(CUlogsCallback fn, void* user, CUlogsCallbackHandle* out) {
  ApiLog log("cuLogsRegisterCallback");  // declared before the lock: delivered after it is released
  std::lock_guard<std::mutex> lk(S().mu);
  if (!fn) return log.ret(CUDA_ERROR_INVALID_VALUE);
  auto* cb = new LogCallback{fn, user};
  S().objects[cb] = Kind::LogCallback;
  S().log_callbacks.push_back(cb);
  if (out) *out = reinterpret_cast<CUlogsCallbackHandle>(cb);  // optional, as documented
  return CUDA_SUCCESS;
}

SIM_API CUresult cuLogsUnregisterCallback(CUlogsCallbackHandle h) {
  ApiLog log("cuLogsUnregisterCallback");
  std::lock_guard<std::mutex> lk(S().mu);
  if (!h) return log.ret(CUDA_ERROR_INVALID_VALUE, "Callback handle cannot be NULL");
  LogCallback* cb = lookup<LogCallback>(h, Kind::LogCallback);
  if (!cb) return log.ret(CUDA_ERROR_INVALID_VALUE);  // the real driver crashes on a stale handle
  auto& v = S().log_callbacks;
  v.erase(std::remove(v.begin(), v.end(), cb), v.end());
  S().objects.erase(cb);
  delete cb;
  return CUDA_SUCCESS;
}

SIM_API CUresult cuGetErrorName(CUresult error, const char** pStr) {
  if (!pStr) return CUDA_ERROR_INVALID_VALUE;
  for (const ErrText& e : kErrors)
    if (e.code == error) {
      *pStr = e.name;
      return CUDA_SUCCESS;
    }
  *pStr = nullptr;
  return CUDA_ERROR_INVALID_VALUE;
}

SIM_API CUresult cuGetErrorString(CUresult error, const char** pStr) {
  if (!pStr) return CUDA_ERROR_INVALID_VALUE;
  for (const ErrText& e : kErrors)
    if (e.code == error) {
      *pStr = e.text;
      return CUDA_SUCCESS;
    }
  *pStr = nullptr;
  return CUDA_ERROR_INVALID_VALUE;
}

// --- the one-line entry points and cuGetProcAddress, from entry_points.def
// --------------------------------------------------------------------------------------------------------

namespace {
CUresult lookup_proc(const char* symbol, void** pfn, int version, cuuint64_t flags,
                     CUdriverProcAddressQueryResult* status);
}  // namespace

#define SIM_DRIVER_FORWARD(base_name, version, function, parameters, call) \
  SIM_API CUresult function parameters {                                   \
    return call;                                                           \
  }
#define SIM_DRIVER_PER_THREAD(base_name, version, function, per_thread_function, parameters, call) \
  SIM_API CUresult function parameters {                                                           \
    [[maybe_unused]] constexpr bool per_thread = false;                                            \
    [[maybe_unused]] constexpr const char* entry_point = #function;                                \
    return call;                                                                                   \
  }                                                                                                \
  SIM_API CUresult per_thread_function parameters {                                                \
    [[maybe_unused]] constexpr bool per_thread = true;                                             \
    [[maybe_unused]] constexpr const char* entry_point = #per_thread_function;                     \
    return call;                                                                                   \
  }
#include "entry_points.def"

namespace {

// One row per (base name, version that introduced this flavour). A request gets the newest row whose version
// is <= cudaVersion; ptsz is handed out when the caller sets CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM.
struct ProcEntry {
  const char* name;
  int version;
  void* fn;
  void* ptsz;
};

#define P(f) reinterpret_cast<void*>(&f)
const ProcEntry kProcs[] = {
#define SIM_DRIVER_OWN(base_name, version, function) {base_name, version, P(function), nullptr},
#define SIM_DRIVER_FORWARD(base_name, version, function, parameters, call) \
  {base_name, version, P(function), nullptr},
#define SIM_DRIVER_PER_THREAD(base_name, version, function, per_thread_function, parameters, call) \
  {base_name, version, P(function), P(per_thread_function)},
#include "entry_points.def"
};
#undef P

CUresult lookup_proc(const char* symbol, void** pfn, int version, cuuint64_t flags,
                     CUdriverProcAddressQueryResult* status) {
  if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
  *pfn = nullptr;
  const ProcEntry* best = nullptr;
  bool known = false;
  for (const ProcEntry& e : kProcs) {
    if (e.version > driver_version() || std::strcmp(e.name, symbol) != 0) continue;
    known = true;
    if (e.version <= version && (!best || e.version > best->version)) best = &e;
  }
  if (!best) {
    if (status)
      *status = known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_ERROR_NOT_FOUND;
  }
  const bool per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  *pfn = (per_thread && best->ptsz) ? best->ptsz : best->fn;
  if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

}  // namespace
// SPDX-License-Identifier: MIT
