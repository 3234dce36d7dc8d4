// Reading the facts the engine needs out of each hooked call's parameters. Overloads are chosen by
// the parameter list, so a new hook with a known shape needs no code here.
#pragma once

#include "shim.h"

namespace blockrun::shim {

// ---- kernel launches ----

struct LaunchFacts {
  const void* handle = nullptr;  // host stub or kernel handle: what names the kernel
  const char* (*name_of)(const void* handle) = nullptr;
  cudaStream_t stream = nullptr;
  Dim3 grid, block;
  uint64_t shared_memory = 0;
};

const char* name_of_host_stub(const void* stub);        // cudaFuncGetName
const char* name_of_kernel_handle(const void* kernel);  // cuKernelGetName, then cudaFuncGetName

inline Dim3 to_dim3(dim3 d) {
  return Dim3{d.x, d.y, d.z};
}

inline LaunchFacts launch_facts(const void* func, dim3 grid, dim3 block, void**, size_t shared_memory,
                                cudaStream_t stream) {
  return LaunchFacts{func, name_of_host_stub, stream, to_dim3(grid), to_dim3(block), shared_memory};
}

inline LaunchFacts launch_facts(cudaKernel_t kernel, dim3 grid, dim3 block, void**, size_t shared_memory,
                                cudaStream_t stream) {
  return LaunchFacts{kernel, name_of_kernel_handle, stream, to_dim3(grid), to_dim3(block), shared_memory};
}

inline LaunchFacts launch_facts(const cudaLaunchConfig_t* config, const void* func, void**) {
  if (!config) return LaunchFacts{func, name_of_host_stub};
  return LaunchFacts{func,
                     name_of_host_stub,
                     config->stream,
                     to_dim3(config->gridDim),
                     to_dim3(config->blockDim),
                     config->dynamicSmemBytes};
}

// ---- synchronizing calls ----

struct SyncScope {
  enum Kind { Device, Stream, Unknown } kind = Device;
  cudaStream_t stream = nullptr;
};

inline SyncScope sync_scope() {
  return {SyncScope::Device};
}
inline SyncScope sync_scope(cudaStream_t stream) {
  return {SyncScope::Stream, stream};
}
// An event does not say which stream it was recorded on: success tells nothing the engine can use.
inline SyncScope sync_scope(cudaEvent_t) {
  return {SyncScope::Unknown};
}
// cudaMemcpy runs on the legacy default stream, which waits for all blocking streams.
inline SyncScope sync_scope(void*, const void*, size_t, cudaMemcpyKind) {
  return {SyncScope::Device};
}

// ---- other calls: the stream an error belongs to, where the call has one ----

inline cudaStream_t stream_argument() {
  return nullptr;
}
template <typename First, typename... Rest>
cudaStream_t stream_argument(First first, Rest... rest) {
  if constexpr (std::is_same_v<First, cudaStream_t>) {
    return first;
  } else {
    (void)first;
    return stream_argument(rest...);
  }
}

// ---- library calls ----

struct LibraryFacts {
  cublasHandle_t handle = nullptr;
  LibraryCall call;
};

inline char operation_letter(cublasOperation_t op) {
  switch (op) {
    case CUBLAS_OP_N:
      return 'N';
    case CUBLAS_OP_T:
      return 'T';
    case CUBLAS_OP_C:
      return 'C';
    default:
      return '?';
  }
}

template <typename Int, typename Scalar>
LibraryFacts library_facts(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, Int m,
                           Int n, Int k, const Scalar*, const Scalar*, Int, const Scalar*, Int, const Scalar*,
                           Scalar*, Int) {
  LibraryFacts facts;
  facts.handle = handle;
  facts.call.transa = operation_letter(transa);
  facts.call.transb = operation_letter(transb);
  facts.call.m = m;
  facts.call.n = n;
  facts.call.k = k;
  return facts;
}

}  // namespace blockrun::shim
