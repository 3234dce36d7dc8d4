// Shared between the shim's files: the hook and helper tables expanded into typed real-function
// pointers, the process state (inert or active, the engine) and the one scope of the shim's own work.
#pragma once

#include <cublasLt.h>
#include <cublas_api.h>
#include <cuda.h>
#include <cuda_runtime_api.h>

// cuda.h renames cuGetProcAddress to cuGetProcAddress_v2 and cuStreamBeginCapture to
// cuStreamBeginCapture_v2; the shim hooks both ABI versions of each by their exported names, so the
// old names must stay themselves.
#undef cuGetProcAddress
#undef cuStreamBeginCapture

#include <atomic>
#include <cerrno>
#include <cstddef>

#include "cuda/thread_layers.h"
#include "real.h"

namespace blockrun {
// The shim holds the engine by pointer: a file that calls it includes engine.h itself (dlsym.cpp, the
// symbol table and the Python frames never do).
class Engine;
}  // namespace blockrun

namespace blockrun::shim {

enum class Kind {
  Launch,
  Sync,
  Query,
  Call,
  Watch,
  Event,
  Library,
  GraphLaunch,
  GraphInstantiate,
  CaptureBegin,
  CaptureEnd,
  GraphAddKernelNode,
  ProcAddress
};
enum class StreamFlavour { Legacy, PerThread };

enum class Hook : size_t {
#define CUDA_BLOCKRUN_HOOK(layer, kind, stream, return_type, name, parameters, arguments) name,
#include "hooks.def"
  Count
};

enum class Helper : size_t {
#define CUDA_BLOCKRUN_REAL(layer, return_type, name, parameters) name,
#include "hooks.def"
  Count
};

template <Hook id>
struct HookTraits;
#define CUDA_BLOCKRUN_HOOK(layer_, kind_, stream_, return_type, name_, parameters, arguments) \
  template <>                                                                                 \
  struct HookTraits<Hook::name_> {                                                            \
    using Function = return_type(*) parameters;                                               \
    using Result = return_type;                                                               \
    static constexpr const char* name = #name_;                                               \
    static constexpr Layer layer = Layer::layer_;                                             \
    static constexpr Kind kind = Kind::kind_;                                                 \
    static constexpr bool per_thread = StreamFlavour::stream_ == StreamFlavour::PerThread;    \
  };
#include "hooks.def"

template <Helper id>
struct HelperTraits;
#define CUDA_BLOCKRUN_REAL(layer_, return_type, name_, parameters) \
  template <>                                                      \
  struct HelperTraits<Helper::name_> {                             \
    using Function = return_type(*) parameters;                    \
    static constexpr const char* name = #name_;                    \
    static constexpr Layer layer = Layer::layer_;                  \
  };
#include "hooks.def"

// Addresses of the real functions, found on first use. A miss is retried on later calls, since
// CUDA may be loaded after the first call that needed it.
inline std::atomic<void*> hook_addresses[static_cast<size_t>(Hook::Count)];
inline std::atomic<void*> helper_addresses[static_cast<size_t>(Helper::Count)];

template <typename Traits>
void* lookup(std::atomic<void*>& slot) {
  void* address = slot.load(std::memory_order_acquire);
  if (address) return address;
  address = find_real(Traits::name, Traits::layer);
  if (address) slot.store(address, std::memory_order_release);
  return address;
}

template <Hook id>
typename HookTraits<id>::Function real() {
  return reinterpret_cast<typename HookTraits<id>::Function>(
      lookup<HookTraits<id>>(hook_addresses[static_cast<size_t>(id)]));
}

template <Helper id>
typename HelperTraits<id>::Function helper() {
  return reinterpret_cast<typename HelperTraits<id>::Function>(
      lookup<HelperTraits<id>>(helper_addresses[static_cast<size_t>(id)]));
}

// Where a lookup (dlsym on a library handle, cuGetProcAddress) found `address` for `symbol`: returns
// the shim's wrapper when `address` is the real function of a hook of that name (for cuGetProcAddress,
// of that base name: "cuLaunchKernel" may give cuLaunchKernel or cuLaunchKernel_ptsz), else `address`.
void* substitute_wrapper(const char* symbol, void* address, bool by_base_name);

// For a shim loaded after start (the Python door; process.cpp): opens libcuda, keeps its real functions (the
// driver's hooks and helpers), then points libcuda's own exported hooks at the shim's wrappers
// (symbol_table.h), so that a library that finds the driver later, with dlsym or by linking it, finds the
// shim as under LD_PRELOAD (docs/python.md). Nothing where no driver is installed.
void claim_driver_library();

// What a thread is inside of, so that one launch is recorded once however many layers it crosses:
// a runtime launch continues into the driver, a library call launches kernels through the driver. Who owns a
// launch is the engine's answer (src/cuda/launch_layers.h) from `layers`.
struct ThreadContext {
  int reentry_depth = 0;  // > 0 while the shim's own code runs (see ShimScope)
  int outer_depth = 0;    // > 0 inside a runtime or library wrapper's real call
  // Where the program called in: the return address of the exported launch, library or graph-launch
  // wrapper most recently entered (note_caller). `layers` keeps the outer runtime launch's and library
  // call's while they run, so that a launch's record names the code that called CUDA, not CUDA's own code.
  uintptr_t entry_caller = 0;
  ThreadLayers layers;  // set by the runtime launch and library wrappers around their real calls
};

inline ThreadContext& thread_context() {
  thread_local ThreadContext context;
  return context;
}

// Once, at the first driver launch (the driver is loaded then, and the call is not inside the runtime's
// initialization): registers the shim's listener for the driver's error log (CUDA 12.9+), and the check of
// the context at exit (after the runtime's exit handlers, so that it runs before them). Inline: every later
// launch pays one load; the first one's work is at_first_launch_slow (process.cpp).
inline std::atomic<bool> g_first_launch_seen{false};
void at_first_launch_slow();
inline void at_first_launch() {
  if (!g_first_launch_seen.load(std::memory_order_relaxed)) at_first_launch_slow();
}

// Whether the shim acts in this process (configured, enabled, not in secure-execution mode).
bool shim_active();
// Whether cuGetProcAddress and dlsym hand out the shim's wrappers: where it acts, and where it stepped aside
// for another install's copy loaded first (process.cpp), whose real functions may be these wrappers.
bool hands_out_wrappers();

// The engine once it exists (set only while the shim is active: process.cpp). Read by every wrapper.
inline std::atomic<Engine*> g_engine{nullptr};

// The engine when the shim is active and the calling thread is not already inside the shim's own
// code; nullptr otherwise (then a wrapper only forwards). Inline: every wrapper asks, and once the engine
// exists the answer is a thread-local load and an atomic load; configuring and creating it is the slow path.
Engine* active_engine_slow();
inline Engine* active_engine();

// The calling thread's CUDA runtime "last error" around a runtime call the shim makes for itself:
// clean() says whether no error was pending before; clear_own_error() removes the error that call
// left, only when none was pending before, so the program never reads an error of the shim's.
class RuntimeErrorScope {
 public:
  RuntimeErrorScope() {
    auto peek = real<Hook::cudaPeekAtLastError>();
    clean_ = peek && peek() == cudaSuccess;
  }
  bool clean() const { return clean_; }
  void clear_own_error() const {
    if (!clean_) return;
    if (auto get_last_error = real<Hook::cudaGetLastError>()) get_last_error();
  }

 private:
  bool clean_ = false;
};

// The one prologue of the shim's own work, in a wrapper or wherever else the shim runs on a thread of the
// program (an exit handler, the driver's log callback; TSan's ScopedInterceptor): errno at its end is what it
// was at its start (as the real function or the program left it, never the shim's), and while it lives the
// thread is marked as running shim code, so that the CUDA calls the shim makes for itself are not recorded
// (active_engine() answers nullptr) and dlsym hands out the real functions, not the wrappers.
class ShimScope {
 public:
  ShimScope() : saved_errno_(errno) { thread_context().reentry_depth++; }
  ~ShimScope() {
    thread_context().reentry_depth--;
    errno = saved_errno_;
  }
  ShimScope(const ShimScope&) = delete;
  ShimScope& operator=(const ShimScope&) = delete;
  // The shim's own calls pass through unobserved: active_engine, the dlsym hook and the _exit hooks ask.
  static bool inside() { return thread_context().reentry_depth > 0; }

 private:
  int saved_errno_;
};

// Runs the shim's own work (the engine's, or a CUDA call of the shim's) in a ShimScope. Nothing throws across
// the C ABI: a failure of the shim's own is the engine's to report (where it can), and never becomes the
// program's CUDA error or ends it, so anything thrown stops here and the caller goes on (a wrapper returns
// the real result).
template <typename Work>
[[gnu::always_inline]] inline void shim_work(Work&& work) noexcept {
  ShimScope scope;
  try {
    work();
  } catch (...) {
  }
}

inline Engine* active_engine() {
  if (ShimScope::inside()) return nullptr;
  if (Engine* engine = g_engine.load(std::memory_order_acquire)) return engine;
  return active_engine_slow();
}

}  // namespace blockrun::shim
// SPDX-License-Identifier: MIT
