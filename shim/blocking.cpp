// Making a launch blocking (see blocking.h).
#include "blocking.h"

namespace blockrun::shim {

namespace {

// Errors a capture query gives about capture itself; any other error means the context already
// failed, and that error is the blocked launch's result.
bool is_capture_error(int code) {
  return code >= 900 && code <= 910;
}

BlockResult block_with_runtime(cudaStream_t stream, bool per_thread, bool whole_device) {
  auto is_capturing = helper<Helper::cudaStreamIsCapturing>();
  auto exchange_mode = helper<Helper::cudaThreadExchangeStreamCaptureMode>();
  auto synchronize = real<Hook::cudaStreamSynchronize>();
  if (!is_capturing || !exchange_mode || !synchronize) return {BlockOutcome::SkippedUnknown};
  if (per_thread && stream == nullptr) stream = cudaStreamPerThread;

  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  RuntimeErrorScope error_scope;
  cudaError_t query = is_capturing(stream, &status);
  if (query != cudaSuccess) {
    if (is_capture_error(query)) {
      error_scope.clear_own_error();  // the program must not read the shim's question as its own error
      return {BlockOutcome::SkippedUnknown};
    }
    return {BlockOutcome::Synchronized, {Family::Runtime, query}, "cudaStreamIsCapturing"};
  }
  if (status != cudaStreamCaptureStatusNone) return {BlockOutcome::SkippedCapture};

  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  exchange_mode(&mode);
  cudaError_t result = cudaSuccess;
  const char* api = "cudaStreamSynchronize";
  if (whole_device) {
    auto synchronize_device = real<Hook::cudaDeviceSynchronize>();
    result = synchronize_device ? synchronize_device() : cudaErrorInitializationError;
    api = "cudaDeviceSynchronize";
  } else {
    result = synchronize(stream);
  }
  exchange_mode(&mode);
  return {BlockOutcome::Synchronized, {Family::Runtime, result}, api};
}

BlockResult block_with_driver(CUstream stream, bool per_thread, bool whole_device) {
  auto is_capturing = helper<Helper::cuStreamIsCapturing>();
  auto exchange_mode = helper<Helper::cuThreadExchangeStreamCaptureMode>();
  auto synchronize = helper<Helper::cuStreamSynchronize>();
  if (!is_capturing || !exchange_mode || !synchronize) return {BlockOutcome::SkippedUnknown};
  if (per_thread && stream == nullptr) stream = CU_STREAM_PER_THREAD;

  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  CUresult query = is_capturing(stream, &status);
  if (query != CUDA_SUCCESS) {
    if (is_capture_error(query)) return {BlockOutcome::SkippedUnknown};
    return {BlockOutcome::Synchronized, {Family::Driver, query}, "cuStreamIsCapturing"};
  }
  if (status != CU_STREAM_CAPTURE_STATUS_NONE) return {BlockOutcome::SkippedCapture};

  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  exchange_mode(&mode);
  CUresult result = CUDA_SUCCESS;
  const char* api = "cuStreamSynchronize";
  if (whole_device) {
    auto synchronize_device = real<Hook::cuCtxSynchronize>();
    result = synchronize_device ? synchronize_device() : CUDA_ERROR_NOT_INITIALIZED;
    api = "cuCtxSynchronize";
  } else {
    result = synchronize(stream);
  }
  exchange_mode(&mode);
  return {BlockOutcome::Synchronized, {Family::Driver, result}, api};
}

}  // namespace

BlockResult block_stream(Family family, cudaStream_t stream, bool per_thread, bool whole_device) {
  if (family != Family::Runtime && helper<Helper::cuStreamSynchronize>()) {
    return block_with_driver(stream, per_thread, whole_device);
  }
  return block_with_runtime(stream, per_thread, whole_device);
}

}  // namespace blockrun::shim
