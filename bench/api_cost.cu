// Benchmark: what the CUDA calls a blocked launch may add cost, each timed alone (no shim needed):
// the capture query and capture-mode exchange the shim makes around a blocking synchronize once a
// capture has begun in the process, the runtime's last-error peek, a synchronize and a query of an idle
// stream, and an empty kernel waited for by a synchronize or by polling the stream (what a blocked launch
// does). Prints "BENCH api_<call> <nanoseconds per call> ns" lines (bench/harness.py reads that format too).
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
  return cudaStreamDestroy(stream) == cudaSuccess ? 0 : 1;
}
