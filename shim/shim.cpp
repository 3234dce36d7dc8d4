// The exported wrappers, generated from hooks.def, and the one handler per kind of hook they call.
// Every wrapper has the same shape: find the real function, let the engine see the call, call the
// real function exactly once, let the engine see the result, return it unchanged unless the policy
// blocked the launch and the synchronize failed (then that error, as CUDA_LAUNCH_BLOCKING=1 does).
#include <cerrno>
#include <string>

#include "blocking.h"
#include "facts.h"
#include "shim.h"

namespace blockrun::shim {

namespace {

ErrorCode code_of(cudaError_t result) {
  return {Family::Runtime, static_cast<int>(result)};
}
ErrorCode code_of(CUresult result) {
  return {Family::Driver, static_cast<int>(result)};
}
ErrorCode code_of(cublasStatus_t result) {
  return {Family::Cublas, static_cast<int>(result)};
}

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
    ReentryGuard guard;
    try {
      engine->report_shim_problem(std::string("the real ") + HookTraits<id>::name +
                                  " was not found in any loaded library; returning its library's "
                                  "'not initialized' status");
    } catch (...) {
    }
  }
  return not_initialized<typename HookTraits<id>::Result>();
}

// Keeps errno as the real function left it across the engine's work.
class ErrnoKeeper {
 public:
  ErrnoKeeper() : saved_(errno) {}
  ~ErrnoKeeper() { errno = saved_; }

 private:
  int saved_;
};

template <Hook id, typename Function, typename... Args>
auto handle_launch(Engine& engine, Function real_function, Args... args) {
  using Traits = HookTraits<id>;
  Launch launch;
  bool recorded = false;
  LaunchFacts facts = launch_facts(args...);
  {
    ErrnoKeeper keep_errno;  // naming a new kernel may call into CUDA and the C library
    ReentryGuard guard;
    try {
      LaunchRequest request;
      request.api = Traits::name;
      request.kernel = engine.kernel(facts.handle, [&] { return facts.name_of(facts.handle); });
      request.stream = facts.stream;
      request.per_thread_default_stream = Traits::per_thread;
      request.grid = facts.grid;
      request.block = facts.block;
      request.shared_memory = facts.shared_memory;
      engine.begin_launch(request, &launch);
      recorded = true;
    } catch (...) {
    }
  }
  auto result = real_function(args...);
  if (!recorded) return result;
  ErrnoKeeper keep_errno;
  ReentryGuard guard;
  try {
    BlockResult blocked;
    if (result == cudaSuccess && launch.block)
      blocked = block_stream(Traits::family, facts.stream, Traits::per_thread);
    engine.end_launch(launch, code_of(result), blocked.outcome, blocked.result, blocked.api);
    if (blocked.outcome == BlockOutcome::Synchronized && !blocked.result.ok()) {
      result = static_cast<decltype(result)>(blocked.result.code);
    }
  } catch (...) {
  }
  return result;
}

template <Hook id, typename Function, typename... Args>
auto handle_sync(Engine& engine, Function real_function, Args... args) {
  using Traits = HookTraits<id>;
  uint64_t mark = engine.begin_sync();
  auto result = real_function(args...);
  ErrnoKeeper keep_errno;
  ReentryGuard guard;
  try {
    ErrorCode code = code_of(result);
    if (Traits::kind == Kind::Query && result == cudaErrorNotReady) return result;  // an answer, not an error
    SyncScope scope = sync_scope(args...);
    if (scope.kind == SyncScope::Unknown) {
      engine.observe_error(Traits::name, code, nullptr, false);
    } else {
      engine.end_sync(Traits::name, scope.kind == SyncScope::Device, scope.stream, Traits::per_thread, mark,
                      code);
    }
  } catch (...) {
  }
  return result;
}

template <Hook id, typename Function, typename... Args>
auto handle_call(Engine& engine, Function real_function, Args... args) {
  using Traits = HookTraits<id>;
  auto result = real_function(args...);
  if (code_of(result).ok()) return result;
  ErrnoKeeper keep_errno;
  ReentryGuard guard;
  try {
    engine.observe_error(Traits::name, code_of(result), stream_argument(args...), Traits::per_thread);
  } catch (...) {
  }
  return result;
}

// How many library calls the calling thread is inside. A library may implement one entry point by
// calling another through its own exported symbol (cublasSgemm_v2 -> cublasSgemm_v2_64), which the
// preload intercepts too: that inner call is part of the outer unit, not a second one.
int& library_depth() {
  thread_local int depth = 0;
  return depth;
}

class LibraryScope {
 public:
  LibraryScope() { ++library_depth(); }
  ~LibraryScope() { --library_depth(); }
};

template <Hook id, typename Function, typename... Args>
auto handle_library(Engine& engine, Function real_function, Args... args) {
  using Traits = HookTraits<id>;
  if (library_depth() > 0) return real_function(args...);
  Launch launch;
  bool recorded = false;
  cudaStream_t stream = nullptr;
  {
    ErrnoKeeper keep_errno;  // asking cuBLAS for the handle's stream may touch errno
    ReentryGuard guard;
    try {
      LibraryFacts facts = library_facts(args...);
      if (auto get_stream = helper<Helper::cublasGetStream_v2>()) {
        if (get_stream(facts.handle, &stream) != CUBLAS_STATUS_SUCCESS) stream = nullptr;
      }
      LaunchRequest request;
      request.api = Traits::name;
      request.library_api = Traits::name;
      request.library = facts.call;
      request.stream = stream;
      engine.begin_launch(request, &launch);
      recorded = true;
    } catch (...) {
    }
  }
  auto result = [&] {
    LibraryScope scope;
    return real_function(args...);
  }();
  if (!recorded) return result;
  ErrnoKeeper keep_errno;
  ReentryGuard guard;
  try {
    BlockResult blocked;
    if (result == CUBLAS_STATUS_SUCCESS && launch.block)
      blocked = block_stream(Family::Driver, stream, false);
    engine.end_launch(launch, code_of(result), blocked.outcome, blocked.result, blocked.api);
    // cuBLAS reports a failed kernel as an execution failure; the CUDA error is in the log.
    if (blocked.outcome == BlockOutcome::Synchronized && !blocked.result.ok())
      result = CUBLAS_STATUS_EXECUTION_FAILED;
  } catch (...) {
  }
  return result;
}

template <Hook id, typename... Args>
typename HookTraits<id>::Result intercept(Args... args) {
  using Traits = HookTraits<id>;
  auto real_function = real<id>();
  if (!real_function) return missing_real<id>();
  Engine* engine = active_engine();
  if (!engine) return real_function(args...);
  if constexpr (Traits::kind == Kind::Launch) {
    return handle_launch<id>(*engine, real_function, args...);
  } else if constexpr (Traits::kind == Kind::Sync || Traits::kind == Kind::Query) {
    return handle_sync<id>(*engine, real_function, args...);
  } else if constexpr (Traits::kind == Kind::Call) {
    return handle_call<id>(*engine, real_function, args...);
  } else {
    return handle_library<id>(*engine, real_function, args...);
  }
}

}  // namespace

}  // namespace blockrun::shim

#define CUDA_BLOCKRUN_HOOK(family, kind, stream, return_type, name, parameters, arguments) \
  extern "C" __attribute__((visibility("default"))) return_type name parameters {          \
    return blockrun::shim::intercept<blockrun::shim::Hook::name> arguments;                \
  }
#include "hooks.def"
