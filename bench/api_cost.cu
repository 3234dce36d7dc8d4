// Benchmark: what the CUDA calls a blocked launch may add cost, each timed alone (no shim needed):
// the capture query and capture-mode exchange the shim makes around a blocking synchronize once a
// capture has begun in the process, the runtime's last-error peek, a synchronize and a query of an idle
// stream, and an empty kernel waited for by a synchronize or by polling the stream (what a blocked launch
// does). For the breadcrumbs of issue 8: launches on a stream each followed by a 64-bit stream write into
// pinned host-mapped memory, or by an event record, against launches alone (throughput, synchronized at the
// end). The event calls the shim follows (a record, a wait, a query and a synchronize of a completed event):
// run it under the wrapper too for what the shim adds to each. Prints "BENCH api_<call> <nanoseconds per
// call> ns" lines (bench/harness.py reads that format too).
//   api_cost [calls=200000]
#include <cuda.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

__global__ void empty_kernel() {}

template <typename Call>
void time_call(const char* name, int calls, Call&& call) {
  for (int i = 0; i < 1000; ++i) call();
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) call();
  auto stop = std::chrono::steady_clock::now();
  std::printf("BENCH api_%s %.1f ns\n", name,
              std::chrono::duration<double, std::nano>(stop - start).count() / calls);
}

// Like time_call, but the stream's work is waited for before the clock stops: the cost per iteration of a
// stream kept busy.
template <typename Call>
void time_stream(const char* name, int calls, cudaStream_t stream, Call&& call) {
  for (int i = 0; i < 1000; ++i) call();
  cudaStreamSynchronize(stream);
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) call();
  cudaStreamSynchronize(stream);
  auto stop = std::chrono::steady_clock::now();
  std::printf("BENCH api_%s %.1f ns\n", name,
              std::chrono::duration<double, std::nano>(stop - start).count() / calls);
}

int main(int argc, char** argv) {
  int calls = argc > 1 ? std::atoi(argv[1]) : 200000;
  cudaStream_t stream = nullptr;
  if (cudaStreamCreate(&stream) != cudaSuccess) return 1;
  empty_kernel<<<1, 32, 0, stream>>>();
  if (cudaStreamSynchronize(stream) != cudaSuccess) return 1;
  cudaStreamCaptureStatus status;
  CUstreamCaptureStatus cu_status;
  time_call("cudaStreamIsCapturing", calls, [&] { cudaStreamIsCapturing(stream, &status); });
  time_call("cudaThreadExchangeStreamCaptureMode", calls, [&] {
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    cudaThreadExchangeStreamCaptureMode(&mode);
  });
  time_call("cudaPeekAtLastError", calls, [&] { cudaPeekAtLastError(); });
  time_call("cuStreamIsCapturing", calls, [&] { cuStreamIsCapturing(stream, &cu_status); });
  time_call("cuThreadExchangeStreamCaptureMode", calls, [&] {
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    cuThreadExchangeStreamCaptureMode(&mode);
  });
  time_call("cudaStreamSynchronize_idle", calls, [&] { cudaStreamSynchronize(stream); });
  time_call("cuStreamSynchronize_idle", calls, [&] { cuStreamSynchronize(stream); });
  time_call("cuStreamQuery_idle", calls, [&] { cuStreamQuery(stream); });
  // The event calls the shim follows for the order they give streams (shim/hooks.def, Event rows): a record
  // on an idle stream, another stream's wait on it, and a query and a synchronize of the completed event.
  {
    cudaEvent_t marker = nullptr;
    cudaStream_t other = nullptr;
    if (cudaEventCreateWithFlags(&marker, cudaEventDisableTiming) != cudaSuccess) return 1;
    if (cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking) != cudaSuccess) return 1;
    time_call("cudaEventRecord_idle", calls, [&] { cudaEventRecord(marker, stream); });
    time_call("cudaStreamWaitEvent", calls, [&] { cudaStreamWaitEvent(other, marker, 0); });
    cudaStreamSynchronize(other);
    time_call("cudaEventQuery_done", calls, [&] { cudaEventQuery(marker); });
    time_call("cudaEventSynchronize_done", calls, [&] { cudaEventSynchronize(marker); });
    cudaStreamDestroy(other);
    cudaEventDestroy(marker);
  }
  time_call("launch_then_cudaStreamSynchronize", calls / 10, [&] {
    empty_kernel<<<1, 32, 0, stream>>>();
    cudaStreamSynchronize(stream);
  });
  time_call("launch_then_cuStreamSynchronize", calls / 10, [&] {
    empty_kernel<<<1, 32, 0, stream>>>();
    cuStreamSynchronize(stream);
  });
  time_call("launch_then_poll_cuStreamQuery", calls / 10, [&] {
    empty_kernel<<<1, 32, 0, stream>>>();
    while (cuStreamQuery(stream) == CUDA_ERROR_NOT_READY) {
    }
  });

  // Breadcrumbs: a write of each launch's number into pinned, host-mapped memory, on the launch's stream.
  CUdevice device = 0;
  int mem_ops = -1;
  if (cuCtxGetDevice(&device) == CUDA_SUCCESS)
    cuDeviceGetAttribute(&mem_ops, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, device);
  std::printf("device attribute CAN_USE_64_BIT_STREAM_MEM_OPS: %d\n", mem_ops);
  void* host = nullptr;
  CUdeviceptr crumb = 0;
  cudaEvent_t event = nullptr;
  if (cuMemHostAlloc(&host, 4096, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE) != CUDA_SUCCESS ||
      cuMemHostGetDevicePointer(&crumb, host, 0) != CUDA_SUCCESS ||
      cudaEventCreateWithFlags(&event, cudaEventDisableTiming) != cudaSuccess)
    return 1;
  CUstream cu_stream = static_cast<CUstream>(stream);
  cuuint64_t number = 0;
  time_stream("stream_launch", calls, stream, [&] { empty_kernel<<<1, 32, 0, stream>>>(); });
  time_stream("stream_launch_then_cuStreamWriteValue64", calls, stream, [&] {
    empty_kernel<<<1, 32, 0, stream>>>();
    cuStreamWriteValue64(cu_stream, crumb, ++number, 0);
  });
  time_stream("stream_launch_then_cudaEventRecord", calls, stream, [&] {
    empty_kernel<<<1, 32, 0, stream>>>();
    cudaEventRecord(event, stream);
  });
  volatile cuuint64_t* written = static_cast<volatile cuuint64_t*>(host);
  std::printf("last breadcrumb read back: %llu of %llu written\n", static_cast<unsigned long long>(*written),
              static_cast<unsigned long long>(number));
  cudaEventDestroy(event);
  cuMemFreeHost(host);
  return cudaStreamDestroy(stream) == cudaSuccess ? 0 : 1;
}
// SPDX-License-Identifier: MIT
