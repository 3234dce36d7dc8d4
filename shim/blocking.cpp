// Making a launch blocking (see blocking.h).
#include "blocking.h"

#include <sched.h>

#include <atomic>

namespace blockrun::shim {

namespace {

// Until the process begins its first stream capture no stream is capturing and no capture can be
// invalidated, so a blocked launch synchronizes at once, as CUDA_LAUNCH_BLOCKING=1 does, without the
// capture query and the two capture-mode exchanges (docs/performance.md prices them). The handshake:
// such a synchronize announces itself in g_unchecked_synchronizes before it reads g_capture_began, and
// the first capture sets g_capture_began, then waits until the announced ones have finished. Both
// sides are sequentially consistent, so either the synchronize sees the flag or the capture sees it.
std::atomic<int> g_unchecked_synchronizes{0};

// Runs `synchronize` at once and returns true where no capture has begun; false otherwise (then the
// caller checks the stream's capture state first).
template <typename Synchronize>
bool synchronize_before_any_capture(Synchronize&& synchronize) {
  g_unchecked_synchronizes.fetch_add(1);
  if (g_capture_began.load()) {
    g_unchecked_synchronizes.fetch_sub(1);
    return false;
  }
  synchronize();
  g_unchecked_synchronizes.fetch_sub(1);
  return true;
}

// Errors a capture query gives about capture itself; any other error means the context already
// failed, and that error is the blocked launch's result.
bool is_capture_error(int code) {
  return code >= 900 && code <= 910;
}

// How long a blocked launch polls its stream before it falls back to the blocking synchronize.
constexpr uint64_t kPollNs = 20'000;

// Waits for `stream` by asking the driver whether it is done, for up to kPollNs: a blocked launch is
// mostly a short kernel, and a few queries cost less than a synchronize (bench/api_cost measures each call:
// docs/performance.md, "Single calls, H200"). True: the stream completed
// without error. False: not within the time, or the query failed (an asynchronous error): then the
// caller synchronizes, so the program gets the error from the call CUDA would have given it.
bool completed_by_polling(CUstream stream) {
  auto query = real<Hook::cuStreamQuery>();
  if (!query) return false;
  uint64_t deadline = 0;
  for (unsigned poll = 0;; ++poll) {
    CUresult result = query(stream);
    if (result == CUDA_SUCCESS) return true;
    if (result != CUDA_ERROR_NOT_READY) return false;
    if (poll % 8 != 7) continue;
    uint64_t now = steady_now_ns();
    if (deadline == 0) {
      deadline = now + kPollNs;
    } else if (now > deadline) {
      return false;
    }
  }
}

BlockResult synchronize_with_runtime(cudaStream_t stream, bool whole_device) {
  if (whole_device) {
    auto synchronize_device = real<Hook::cudaDeviceSynchronize>();
    cudaError_t result = synchronize_device ? synchronize_device() : cudaErrorInitializationError;
    return {BlockOutcome::Synchronized, {Layer::Runtime, result}, "cudaDeviceSynchronize"};
  }
  cudaError_t result = completed_by_polling(static_cast<CUstream>(stream))
                           ? cudaSuccess
                           : real<Hook::cudaStreamSynchronize>()(stream);
  return {BlockOutcome::Synchronized, {Layer::Runtime, result}, "cudaStreamSynchronize"};
}

BlockResult synchronize_with_driver(CUstream stream, bool whole_device) {
  if (whole_device) {
    auto synchronize_device = real<Hook::cuCtxSynchronize>();
    CUresult result = synchronize_device ? synchronize_device() : CUDA_ERROR_NOT_INITIALIZED;
    return {BlockOutcome::Synchronized, {Layer::Driver, result}, "cuCtxSynchronize"};
  }
  CUresult result =
      completed_by_polling(stream) ? CUDA_SUCCESS : helper<Helper::cuStreamSynchronize>()(stream);
  return {BlockOutcome::Synchronized, {Layer::Driver, result}, "cuStreamSynchronize"};
}

BlockResult block_with_runtime(cudaStream_t stream, bool per_thread, bool whole_device) {
  auto is_capturing = helper<Helper::cudaStreamIsCapturing>();
  auto exchange_mode = helper<Helper::cudaThreadExchangeStreamCaptureMode>();
  auto synchronize = real<Hook::cudaStreamSynchronize>();
  if (!is_capturing || !exchange_mode || !synchronize) return {BlockOutcome::SkippedUnknown};
  if (per_thread && stream == nullptr) stream = cudaStreamPerThread;
  BlockResult blocked;
  if (synchronize_before_any_capture([&] { blocked = synchronize_with_runtime(stream, whole_device); }))
    return blocked;

  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  RuntimeErrorScope error_scope;
  cudaError_t query = is_capturing(stream, &status);
  if (query != cudaSuccess) {
    if (is_capture_error(query)) {
      error_scope.clear_own_error();  // the program must not read the shim's question as its own error
      return {BlockOutcome::SkippedUnknown};
    }
    return {BlockOutcome::Synchronized, {Layer::Runtime, query}, "cudaStreamIsCapturing"};
  }
  if (status != cudaStreamCaptureStatusNone) return {BlockOutcome::SkippedCapture};

  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  exchange_mode(&mode);
  blocked = synchronize_with_runtime(stream, whole_device);
  exchange_mode(&mode);
  return blocked;
}

BlockResult block_with_driver(CUstream stream, bool per_thread, bool whole_device) {
  auto is_capturing = helper<Helper::cuStreamIsCapturing>();
  auto exchange_mode = helper<Helper::cuThreadExchangeStreamCaptureMode>();
  auto synchronize = helper<Helper::cuStreamSynchronize>();
  if (!is_capturing || !exchange_mode || !synchronize) return {BlockOutcome::SkippedUnknown};
  if (per_thread && stream == nullptr) stream = CU_STREAM_PER_THREAD;
  BlockResult blocked;
  if (synchronize_before_any_capture([&] { blocked = synchronize_with_driver(stream, whole_device); }))
    return blocked;

  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  CUresult query = is_capturing(stream, &status);
  if (query != CUDA_SUCCESS) {
    if (is_capture_error(query)) return {BlockOutcome::SkippedUnknown};
    return {BlockOutcome::Synchronized, {Layer::Driver, query}, "cuStreamIsCapturing"};
  }
  if (status != CU_STREAM_CAPTURE_STATUS_NONE) return {BlockOutcome::SkippedCapture};

  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  exchange_mode(&mode);
  blocked = synchronize_with_driver(stream, whole_device);
  exchange_mode(&mode);
  return blocked;
}

}  // namespace

void note_capture_begins() {
  if (g_capture_began.load()) return;  // the first capture already waited for the unchecked ones
  g_capture_began.store(true);
  // A synchronize that did not see the flag finishes before the capture begins (it waits only for work
  // already queued, never for the capture).
  while (g_unchecked_synchronizes.load() != 0) sched_yield();
}

void reset_blocking_after_fork() {
  g_unchecked_synchronizes.store(0);  // the threads that announced them are not in the child
}

namespace {

enum class Capturing { No, Yes, Unknown };

// What the driver says of `stream` (Unknown: the query is missing or failed); No before the first capture,
// without asking.
Capturing capturing(CUstream stream) {
  if (!capture_has_begun()) return Capturing::No;
  auto query = helper<Helper::cuStreamIsCapturing>();
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  if (!query || query(stream, &status) != CUDA_SUCCESS) return Capturing::Unknown;
  return status == CU_STREAM_CAPTURE_STATUS_NONE ? Capturing::No : Capturing::Yes;
}

}  // namespace

bool is_capturing(CUstream stream) {
  return capturing(stream) == Capturing::Yes;
}

namespace {

// CUDA 11.3's capture query, which drivers before CUDA 12.3 (535) have instead of _v3
// (src/cuda/driver_features.def); cuda.h 13 no longer declares it. Found once.
using CaptureInfoV2 = CUresult (*)(CUstream, CUstreamCaptureStatus*, cuuint64_t*, CUgraph*,
                                   const CUgraphNode**, size_t*);
CaptureInfoV2 capture_info_v2() {
  static const auto found =
      reinterpret_cast<CaptureInfoV2>(find_real("cuStreamGetCaptureInfo_v2", Layer::Driver));
  return found;
}

}  // namespace

uint64_t capture_id(CUstream stream) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  cuuint64_t id = 0;
  CUresult result = CUDA_ERROR_NOT_FOUND;
  if (auto query = helper<Helper::cuStreamGetCaptureInfo_v3>()) {
    result = query(stream, &status, &id, nullptr, nullptr, nullptr, nullptr);
  } else if (auto older = capture_info_v2()) {
    result = older(stream, &status, &id, nullptr, nullptr, nullptr);
  }
  if (result != CUDA_SUCCESS || status != CU_STREAM_CAPTURE_STATUS_ACTIVE) return 0;
  return id;
}

bool may_be_capturing(CUstream stream) {
  return capturing(stream) != Capturing::No;
}

namespace {

// cuEventElapsedTime_v2 (CUDA 12.8), or on an older driver the CUDA 2.0 query of the same signature (cuda.h
// renames the plain name to _v2, so it is found by its exported name). Found once it is there.
using ElapsedTime = CUresult (*)(float*, CUevent, CUevent);
ElapsedTime elapsed_time_function() {
  if (auto newer = helper<Helper::cuEventElapsedTime_v2>()) return newer;
  static const auto older = reinterpret_cast<ElapsedTime>(find_real("cuEventElapsedTime", Layer::Driver));
  return older;
}

// The calling thread's pair of timing events, for the context they were created in.
struct ThreadEvents {
  CUcontext context = nullptr;
  CUevent start = nullptr;
  CUevent end = nullptr;
};

ThreadEvents& thread_events() {
  thread_local ThreadEvents events;
  return events;
}

}  // namespace

void start_block_timing(BlockTiming* timing, const void* stream, bool per_thread) {
  timing->start_ns = steady_now_ns();
  timing->events_recorded = false;
  auto get_context = helper<Helper::cuCtxGetCurrent>();
  auto create = helper<Helper::cuEventCreate>();
  auto record = helper<Helper::cuEventRecord>();
  auto is_capturing = helper<Helper::cuStreamIsCapturing>();
  if (!get_context || !create || !record || !is_capturing || !elapsed_time_function()) return;
  CUstream cu_stream = driver_stream(stream, per_thread);
  if (may_be_capturing(cu_stream)) return;
  CUcontext context = nullptr;
  if (get_context(&context) != CUDA_SUCCESS || !context) return;
  ThreadEvents& events = thread_events();
  if (events.context != context) {
    if (auto destroy = helper<Helper::cuEventDestroy_v2>()) {
      if (events.start) destroy(events.start);
      if (events.end) destroy(events.end);
    }
    events = ThreadEvents{};
    if (create(&events.start, CU_EVENT_DEFAULT) != CUDA_SUCCESS ||
        create(&events.end, CU_EVENT_DEFAULT) != CUDA_SUCCESS)
      return;
    events.context = context;
  }
  timing->events_recorded = record(events.start, cu_stream) == CUDA_SUCCESS;
}

void end_block_timing(const BlockTiming& timing, const void* stream, bool per_thread) {
  if (!timing.events_recorded) return;
  if (auto record = helper<Helper::cuEventRecord>())
    record(thread_events().end, driver_stream(stream, per_thread));
}

void finish_block_timing(BlockTiming* timing, bool synchronized_ok) {
  uint64_t now = steady_now_ns();
  timing->wall_ns = timing->start_ns ? now - timing->start_ns : 0;
  timing->gpu_ns = -1;
  if (!timing->events_recorded || !synchronized_ok) return;
  float milliseconds = 0;
  auto elapsed = elapsed_time_function();
  ThreadEvents& events = thread_events();
  if (elapsed && elapsed(&milliseconds, events.start, events.end) == CUDA_SUCCESS && milliseconds >= 0)
    timing->gpu_ns = static_cast<int64_t>(static_cast<double>(milliseconds) * 1e6);
}

BlockResult block_stream(Layer layer, cudaStream_t stream, bool per_thread, bool whole_device) {
  if (layer != Layer::Runtime && helper<Helper::cuStreamSynchronize>()) {
    return block_with_driver(stream, per_thread, whole_device);
  }
  return block_with_runtime(stream, per_thread, whole_device);
}

}  // namespace blockrun::shim
// SPDX-License-Identifier: MIT
