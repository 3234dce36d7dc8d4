// Reading the facts the engine needs out of each hooked call's parameters. Overloads are chosen by
// the parameter list, so a new hook with a known shape needs no code here.
#pragma once

#include "shim.h"

namespace blockrun::shim {

// ---- kernel launches ----

// What a launch call's parameters say (not the policy's LaunchFacts, which the engine derives from them).
struct LaunchParameters {
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

inline LaunchParameters launch_parameters(const void* func, dim3 grid, dim3 block, void**,
                                          size_t shared_memory, cudaStream_t stream) {
  return LaunchParameters{func, name_of_host_stub, stream, to_dim3(grid), to_dim3(block), shared_memory};
}

inline LaunchParameters launch_parameters(cudaKernel_t kernel, dim3 grid, dim3 block, void**,
                                          size_t shared_memory, cudaStream_t stream) {
  return LaunchParameters{kernel,        name_of_kernel_handle, stream,
                          to_dim3(grid), to_dim3(block),        shared_memory};
}

// Driver launches: the CUfunction is a real function (Triton, CuPy) or a CUkernel cast to one (CUDA 13
// runtime launches); name_of_function tries both.
const char* name_of_function(const void* function);

inline LaunchParameters launch_parameters(CUfunction f, unsigned int grid_x, unsigned int grid_y,
                                          unsigned int grid_z, unsigned int block_x, unsigned int block_y,
                                          unsigned int block_z, unsigned int shared_memory, CUstream stream,
                                          void**, void** = nullptr) {
  return LaunchParameters{f,
                          name_of_function,
                          stream,
                          Dim3{grid_x, grid_y, grid_z},
                          Dim3{block_x, block_y, block_z},
                          shared_memory};
}

inline LaunchParameters launch_parameters(const CUlaunchConfig* config, CUfunction f, void**, void**) {
  if (!config) return LaunchParameters{f, name_of_function};
  return LaunchParameters{f,
                          name_of_function,
                          config->hStream,
                          Dim3{config->gridDimX, config->gridDimY, config->gridDimZ},
                          Dim3{config->blockDimX, config->blockDimY, config->blockDimZ},
                          config->sharedMemBytes};
}

inline LaunchParameters launch_parameters(const cudaLaunchConfig_t* config, const void* func, void**) {
  if (!config) return LaunchParameters{func, name_of_host_stub};
  return LaunchParameters{func,
                          name_of_host_stub,
                          config->stream,
                          to_dim3(config->gridDim),
                          to_dim3(config->blockDim),
                          config->dynamicSmemBytes};
}

// ---- synchronizing calls ----

struct SyncScope {
  enum Kind { Device, Stream, Event, Unknown } kind = Unknown;
  cudaStream_t stream = nullptr;  // Stream: nullptr is the default stream of the entry point's flavour
  cudaEvent_t event = nullptr;
};

// What a synchronizing call's success proves complete, by its parameter list (every Sync and Query row has
// an overload here: a new parameter list does not compile until it says).
// Device synchronizes (cudaDeviceSynchronize, cuCtxSynchronize, cuCtxSynchronize_v2): the whole device.
inline SyncScope sync_scope() {
  return {SyncScope::Device};
}
inline SyncScope sync_scope(CUcontext) {
  return {SyncScope::Device};
}
// cudaStream_t and CUstream are the same type.
inline SyncScope sync_scope(cudaStream_t stream) {
  return {SyncScope::Stream, stream};
}
// cudaEvent_t and CUevent are the same type: the launches before its last record (the engine knows them).
inline SyncScope sync_scope(cudaEvent_t event) {
  return {SyncScope::Event, nullptr, event};
}
// Synchronous copies run on the default stream. One between the host and the device returns after that
// stream's earlier work (a device-to-host copy once it completed; a host-to-device one waits for the stream
// before it starts, or is synchronous from pinned memory): that stream's launches. The legacy stream also
// waits for blocking streams, but which streams block is not known here, and non-blocking ones (PyTorch's)
// are not waited for: no other stream is proved. A device-to-device copy returns without waiting for
// anything (CUDA's "API synchronization behavior"), so its success proves nothing; nor does cuMemcpy's,
// whose direction is not known from its parameters.
inline SyncScope sync_scope(void*, const void*, size_t, cudaMemcpyKind kind) {
  if (kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToHost) return {SyncScope::Stream};
  return {SyncScope::Unknown};
}
inline SyncScope sync_scope(CUdeviceptr, const void*, size_t) {  // host to device
  return {SyncScope::Stream};
}
inline SyncScope sync_scope(void*, CUdeviceptr, size_t) {  // device to host
  return {SyncScope::Stream};
}
inline SyncScope sync_scope(CUdeviceptr, CUdeviceptr, size_t) {  // device to device, or cuMemcpy
  return {SyncScope::Unknown};
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
  cublasHandle_t handle = nullptr;  // the stream comes from the handle
  bool has_stream = false;          // or from an argument (cuBLASLt)
  cudaStream_t stream = nullptr;
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

// Every cuBLAS GEMM starts (handle, transa, transb, m, n, k, ...).
template <typename Int, typename... Rest>
LibraryFacts library_facts(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, Int m,
                           Int n, Int k, Rest...) {
  LibraryFacts facts;
  facts.handle = handle;
  facts.call.transa = operation_letter(transa);
  facts.call.transb = operation_letter(transb);
  facts.call.m = m;
  facts.call.n = n;
  facts.call.k = k;
  return facts;
}

// cuBLASLt's matmul takes its stream as an argument; its shape lives in the layouts (not read).
template <typename... Rest>
LibraryFacts library_facts(cublasLtHandle_t, cublasLtMatmulDesc_t, Rest... rest) {
  LibraryFacts facts;
  facts.has_stream = true;
  facts.stream = stream_argument(rest...);
  return facts;
}

}  // namespace blockrun::shim
// SPDX-License-Identifier: MIT
