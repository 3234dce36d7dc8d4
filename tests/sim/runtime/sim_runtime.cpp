// Simulated CUDA runtime (libcudart.so.13 and libcudart_static.a): a test double that reaches the driver
// exactly as the real runtime does, so cuda-blockrun can be tested without a GPU.
//
// It keeps no device state of its own: every operation goes to the (simulated or, in principle, real) driver
// through entry points fetched with cuGetProcAddress (see common/driver_loader.h). What it adds is what the
// real runtime adds: the nvcc host-registration ABI (host stub -> mangled name -> CUkernel: every registered
// fatbin loaded with cuLibraryLoadData when the first kernel is needed, each kernel fetched with
// cuLibraryGetKernel on its first use), the <<<>>> call-configuration stack, the per-thread "last error" and
// the runtime error names and strings. The entry points that only forward (to the driver, or to a helper
// here with the legacy or the per-thread default stream) are the rows of entry_points.def, expanded at the
// end of this file; the others are written out below.

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <pthread.h>

#include <atomic>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "../common/driver_loader.h"

#define SIM_RT extern "C" __attribute__((visibility("default")))

namespace {

// --- driver entry points
// ------------------------------------------------------------------------------------------
// The driver functions the runtime fetches at start-up, as X(member, name looked up, declared function giving
// the type, per-thread flavour?).
#define SIM_DRIVER_FUNCS(X)                                                                                  \
  X(Init, "cuInit", cuInit, false)                                                                           \
  X(DeviceGet, "cuDeviceGet", cuDeviceGet, false)                                                            \
  X(DeviceGetCount, "cuDeviceGetCount", cuDeviceGetCount, false)                                             \
  X(DeviceGetAttribute, "cuDeviceGetAttribute", cuDeviceGetAttribute, false)                                 \
  X(DriverGetVersion, "cuDriverGetVersion", cuDriverGetVersion, false)                                       \
  X(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain, false)                           \
  X(CtxSetCurrent, "cuCtxSetCurrent", cuCtxSetCurrent, false)                                                \
  X(CtxSynchronize, "cuCtxSynchronize", cuCtxSynchronize_v2, false)                                          \
  X(StreamCreate, "cuStreamCreate", cuStreamCreate, false)                                                   \
  X(StreamDestroy, "cuStreamDestroy", cuStreamDestroy_v2, false)                                             \
  X(StreamSynchronize, "cuStreamSynchronize", cuStreamSynchronize, false)                                    \
  X(StreamSynchronize_ptsz, "cuStreamSynchronize", cuStreamSynchronize, true)                                \
  X(StreamQuery, "cuStreamQuery", cuStreamQuery, false)                                                      \
  X(StreamQuery_ptsz, "cuStreamQuery", cuStreamQuery, true)                                                  \
  X(StreamWaitEvent, "cuStreamWaitEvent", cuStreamWaitEvent, false)                                          \
  X(StreamWaitEvent_ptsz, "cuStreamWaitEvent", cuStreamWaitEvent, true)                                      \
  X(EventCreate, "cuEventCreate", cuEventCreate, false)                                                      \
  X(EventRecord, "cuEventRecord", cuEventRecord, false)                                                      \
  X(EventRecord_ptsz, "cuEventRecord", cuEventRecord, true)                                                  \
  X(EventSynchronize, "cuEventSynchronize", cuEventSynchronize, false)                                       \
  X(EventQuery, "cuEventQuery", cuEventQuery, false)                                                         \
  X(EventDestroy, "cuEventDestroy", cuEventDestroy_v2, false)                                                \
  X(MemAlloc, "cuMemAlloc", cuMemAlloc_v2, false)                                                            \
  X(MemFree, "cuMemFree", cuMemFree_v2, false)                                                               \
  X(MemHostAlloc, "cuMemHostAlloc", cuMemHostAlloc, false)                                                   \
  X(MemFreeHost, "cuMemFreeHost", cuMemFreeHost, false)                                                      \
  X(MemHostGetDevicePointer, "cuMemHostGetDevicePointer", cuMemHostGetDevicePointer_v2, false)               \
  X(Memcpy, "cuMemcpy", cuMemcpy, false)                                                                     \
  X(Memcpy_ptds, "cuMemcpy", cuMemcpy, true)                                                                 \
  X(MemcpyHtoD, "cuMemcpyHtoD", cuMemcpyHtoD_v2, false)                                                      \
  X(MemcpyHtoD_ptds, "cuMemcpyHtoD", cuMemcpyHtoD_v2, true)                                                  \
  X(MemcpyDtoH, "cuMemcpyDtoH", cuMemcpyDtoH_v2, false)                                                      \
  X(MemcpyDtoH_ptds, "cuMemcpyDtoH", cuMemcpyDtoH_v2, true)                                                  \
  X(MemcpyDtoD, "cuMemcpyDtoD", cuMemcpyDtoD_v2, false)                                                      \
  X(MemcpyDtoD_ptds, "cuMemcpyDtoD", cuMemcpyDtoD_v2, true)                                                  \
  X(MemcpyAsync, "cuMemcpyAsync", cuMemcpyAsync, false)                                                      \
  X(MemcpyAsync_ptsz, "cuMemcpyAsync", cuMemcpyAsync, true)                                                  \
  X(MemcpyHtoDAsync, "cuMemcpyHtoDAsync", cuMemcpyHtoDAsync_v2, false)                                       \
  X(MemcpyHtoDAsync_ptsz, "cuMemcpyHtoDAsync", cuMemcpyHtoDAsync_v2, true)                                   \
  X(MemcpyDtoHAsync, "cuMemcpyDtoHAsync", cuMemcpyDtoHAsync_v2, false)                                       \
  X(MemcpyDtoHAsync_ptsz, "cuMemcpyDtoHAsync", cuMemcpyDtoHAsync_v2, true)                                   \
  X(MemsetD8, "cuMemsetD8", cuMemsetD8_v2, false)                                                            \
  X(MemsetD8_ptds, "cuMemsetD8", cuMemsetD8_v2, true)                                                        \
  X(MemsetD8Async, "cuMemsetD8Async", cuMemsetD8Async, false)                                                \
  X(MemsetD8Async_ptsz, "cuMemsetD8Async", cuMemsetD8Async, true)                                            \
  X(LaunchKernel, "cuLaunchKernel", cuLaunchKernel, false)                                                   \
  X(LaunchKernel_ptsz, "cuLaunchKernel", cuLaunchKernel, true)                                               \
  X(LaunchKernelEx, "cuLaunchKernelEx", cuLaunchKernelEx, false)                                             \
  X(LaunchKernelEx_ptsz, "cuLaunchKernelEx", cuLaunchKernelEx, true)                                         \
  X(LaunchCooperativeKernel, "cuLaunchCooperativeKernel", cuLaunchCooperativeKernel, false)                  \
  X(LaunchCooperativeKernel_ptsz, "cuLaunchCooperativeKernel", cuLaunchCooperativeKernel, true)              \
  X(LaunchHostFunc, "cuLaunchHostFunc", cuLaunchHostFunc, false)                                             \
  X(LaunchHostFunc_ptsz, "cuLaunchHostFunc", cuLaunchHostFunc, true)                                         \
  X(StreamBeginCapture, "cuStreamBeginCapture", cuStreamBeginCapture_v2, false)                              \
  X(StreamBeginCapture_ptsz, "cuStreamBeginCapture", cuStreamBeginCapture_v2, true)                          \
  X(StreamEndCapture, "cuStreamEndCapture", cuStreamEndCapture, false)                                       \
  X(StreamEndCapture_ptsz, "cuStreamEndCapture", cuStreamEndCapture, true)                                   \
  X(StreamIsCapturing, "cuStreamIsCapturing", cuStreamIsCapturing, false)                                    \
  X(StreamIsCapturing_ptsz, "cuStreamIsCapturing", cuStreamIsCapturing, true)                                \
  X(StreamGetCaptureInfo, "cuStreamGetCaptureInfo", cuStreamGetCaptureInfo_v3, false)                        \
  X(StreamGetCaptureInfo_ptsz, "cuStreamGetCaptureInfo", cuStreamGetCaptureInfo_v3, true)                    \
  X(ThreadExchangeStreamCaptureMode, "cuThreadExchangeStreamCaptureMode", cuThreadExchangeStreamCaptureMode, \
    false)                                                                                                   \
  X(GraphInstantiate, "cuGraphInstantiateWithFlags", cuGraphInstantiateWithFlags, false)                     \
  X(GraphLaunch, "cuGraphLaunch", cuGraphLaunch, false)                                                      \
  X(GraphLaunch_ptsz, "cuGraphLaunch", cuGraphLaunch, true)                                                  \
  X(GraphDestroy, "cuGraphDestroy", cuGraphDestroy, false)                                                   \
  X(GraphExecDestroy, "cuGraphExecDestroy", cuGraphExecDestroy, false)                                       \
  X(LibraryLoadData, "cuLibraryLoadData", cuLibraryLoadData, false)                                          \
  X(LibraryGetKernel, "cuLibraryGetKernel", cuLibraryGetKernel, false)                                       \
  X(KernelGetName, "cuKernelGetName", cuKernelGetName, false)                                                \
  X(KernelGetFunction, "cuKernelGetFunction", cuKernelGetFunction, false)

struct Driver {
#define SIM_MEMBER(m, name, decl, pt) decltype(&decl) m = nullptr;
  SIM_DRIVER_FUNCS(SIM_MEMBER)
#undef SIM_MEMBER
  // Looked up with plain dlsym as well, as the real runtime does at start-up (the reference documents it);
  // the runtime itself launches through the cuGetProcAddress pointers above.
  void* dlsym_cuLaunchKernel = nullptr;
  void* dlsym_cuLaunchKernelEx = nullptr;
  CUcontext primary = nullptr;
};

Driver g_drv;
cudaError_t g_init_error = cudaSuccess;
std::once_flag g_init_once;
thread_local bool t_ctx_current = false;

// Process-wide: once a runtime call has seen a sticky (context-killing) error, cudaGetLastError keeps
// reporting it.
std::atomic<int> g_sticky{0};
thread_local cudaError_t t_last_error = cudaSuccess;

bool is_sticky_error(int e) {
  switch (e) {
    case cudaErrorECCUncorrectable:
    case cudaErrorLaunchTimeout:
    case cudaErrorIllegalAddress:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure:
      return true;
    default:
      return false;
  }
}

// Every failing runtime call records its error as the thread's last error.
cudaError_t fail(cudaError_t e) {
  if (e != cudaSuccess) {
    t_last_error = e;
    int expected = 0;
    if (is_sticky_error(e)) g_sticky.compare_exchange_strong(expected, e);
  }
  return e;
}

// CUresult -> cudaError_t. Since CUDA 10.1 the two enumerations share their values for every error a driver
// call can return here (1 invalid argument, 2 out of memory, 3 initialization error, 400 invalid resource
// handle, 500 named symbol not found, 600 not ready, 700 illegal address, 710 assert, 719 launch failure,
// 900/901/906...), which is also what the real runtime reports; so the conversion is the identity.
cudaError_t ret(CUresult r) {
  return fail(static_cast<cudaError_t>(r));
}

// The real runtime initializes under a process-wide once-lock, and every runtime call waits for it: a runtime
// call made on the initializing thread from inside the initialization (e.g. by an interposer answering the
// runtime's own cuGetProcAddress) never returns. The sim says so and aborts instead of hanging.
thread_local bool t_initializing = false;

void refuse_reentry(const char* api) {
  if (!t_initializing) return;
  std::fprintf(
      stderr,
      "sim runtime: %s called during the runtime's own initialization, on the initializing thread: the "
      "real runtime deadlocks here\n",
      api);
  std::abort();
}

void init_driver_once();

void init_driver() {
  t_initializing = true;
  init_driver_once();
  t_initializing = false;
}

// The driver functions newer than CUDA 12.2 (driver 535) that the runtime can do without: on an older driver
// the runtime starts, and the calls that need them return cudaErrorCallRequiresNewerDriver.
bool needs_newer_driver(const char* member) {
  for (const char* optional : {"KernelGetName", "StreamGetCaptureInfo", "StreamGetCaptureInfo_ptsz"})
    if (std::strcmp(member, optional) == 0) return true;
  return false;
}

void init_driver_once() {
  DriverLoader loader;
  // No libcuda.so.1 at all: the real runtime's answer is "insufficient driver" (cudaDriverGetVersion gives
  // 0).
  if (!loader.open()) {
    g_init_error = cudaErrorInsufficientDriver;
    return;
  }
  // A driver older than this runtime's major version (minor version compatibility: a 12.x runtime runs on any
  // 12.x driver, a 13.x one needs a 13.x driver, 580+) is refused before anything else is asked of it.
  int driver_version = 0;
  if (!loader.get("cuDriverGetVersion", &g_drv.DriverGetVersion) ||
      g_drv.DriverGetVersion(&driver_version) != CUDA_SUCCESS ||
      driver_version / 1000 < SIM_CUDART_VERSION / 1000) {
    g_init_error = cudaErrorInsufficientDriver;
    return;
  }
  g_drv.dlsym_cuLaunchKernel = dlsym(loader.handle(), "cuLaunchKernel");
  g_drv.dlsym_cuLaunchKernelEx = dlsym(loader.handle(), "cuLaunchKernelEx");
  bool ok = true;
#define SIM_FETCH(m, name, decl, pt) ok = (loader.get(name, &g_drv.m, pt) || needs_newer_driver(#m)) && ok;
  SIM_DRIVER_FUNCS(SIM_FETCH)
#undef SIM_FETCH
  if (!ok) {
    g_init_error = cudaErrorInsufficientDriver;
    return;
  }
  CUdevice dev = 0;
  CUresult r = g_drv.Init(0);
  if (r == CUDA_SUCCESS) r = g_drv.DeviceGet(&dev, 0);
  if (r == CUDA_SUCCESS) r = g_drv.PrimaryCtxRetain(&g_drv.primary, dev);
  if (r != CUDA_SUCCESS) g_init_error = static_cast<cudaError_t>(r);
}

// Lazy initialisation on the first call that needs the device, and the primary context made current per
// thread.
cudaError_t ensure() {
  refuse_reentry("a runtime call");
  std::call_once(g_init_once, init_driver);
  if (g_init_error != cudaSuccess) return fail(g_init_error);
  if (!t_ctx_current) {
    if (CUresult r = g_drv.CtxSetCurrent(g_drv.primary)) return ret(r);
    t_ctx_current = true;
  }
  return cudaSuccess;
}

#define ENSURE()                              \
  do {                                        \
    if (cudaError_t e_ = ensure()) return e_; \
  } while (0)

// --- host registration
// -----------------------------------------------------------------------------------------------

// What __cudaRegisterFatBinary hands out; its first member makes it usable as the void** the ABI expects.
struct FatBinary {
  const void* image;
  CUlibrary library = nullptr;  // loaded on first use of one of its kernels
};

struct KernelReg {
  FatBinary* fatbin;
  std::string name;  // mangled
  CUkernel kernel = nullptr;
};

// Never destroyed: registration and launches may run during exit. Created on first use (registration runs
// from static initializers, in the static runtime before this file's own globals), and re-created in a
// forked child (another thread of the parent may have held it at the fork; the child does not have it).
std::mutex* g_reg_mu = nullptr;
std::mutex& reg_mu() {
  static const bool created = [] {
    g_reg_mu = new std::mutex;
    pthread_atfork(nullptr, nullptr, [] { g_reg_mu = new std::mutex; });
    return true;
  }();
  (void)created;
  return *g_reg_mu;
}
std::unordered_map<const void*, KernelReg>& kernels() {
  static auto* k = new std::unordered_map<const void*, KernelReg>;
  return *k;
}

struct LaunchConfig {
  dim3 grid, block;
  size_t shmem;
  cudaStream_t stream;
};
// Never destroyed: the real runtime accepts launches from atexit handlers, which run after thread-local
// destructors of the main thread.
std::vector<LaunchConfig>& config_stack() {
  thread_local std::vector<LaunchConfig>* stack = new std::vector<LaunchConfig>();
  return *stack;
}

// Loads every registered fatbin that has no library yet. Called (under reg_mu) when a kernel is first
// needed: the real runtime loads its modules up front and leaves the per-kernel loading to the driver's
// launch, so a kernel first launched after a device fault still reaches cuLaunchKernel (which returns the
// sticky error) rather than failing in a library load. Fatbins registered later (a library dlopen'ed after
// that) are loaded at the first use of one of their kernels.
CUresult load_libraries() {
  for (auto& kv : kernels()) {
    FatBinary* fb = kv.second.fatbin;
    if (fb->library) continue;
    if (CUresult r = g_drv.LibraryLoadData(&fb->library, fb->image, nullptr, nullptr, 0, nullptr, nullptr, 0))
      return r;
  }
  return CUDA_SUCCESS;
}

// Host stub -> CUkernel, creating the library and kernel in the driver the first time.
cudaError_t kernel_for_stub(const void* stub, CUkernel* out) {
  std::lock_guard<std::mutex> lk(reg_mu());
  auto it = kernels().find(stub);
  if (it == kernels().end()) return cudaErrorInvalidDeviceFunction;
  KernelReg& k = it->second;
  if (!k.kernel) {
    ENSURE();
    if (!k.fatbin->library) {
      if (CUresult r = load_libraries()) return ret(r);
    }
    if (CUresult r = g_drv.LibraryGetKernel(&k.kernel, k.fatbin->library, k.name.c_str())) return ret(r);
  }
  *out = k.kernel;
  return cudaSuccess;
}

bool is_registered_stub(const void* p) {
  std::lock_guard<std::mutex> lk(reg_mu());
  return kernels().count(p) != 0;
}

// The launch APIs take a host stub or (CUDA 12.1+) a cudaKernel_t.
cudaError_t resolve_launch_target(const void* func, CUfunction* out) {
  if (!func) return fail(cudaErrorInvalidDeviceFunction);
  ENSURE();
  if (is_registered_stub(func)) {
    CUkernel k = nullptr;
    if (cudaError_t e = kernel_for_stub(func, &k)) return fail(e);
    *out = reinterpret_cast<CUfunction>(k);
    return cudaSuccess;
  }
  const char* name = nullptr;
  if (g_drv.KernelGetName &&
      g_drv.KernelGetName(&name, reinterpret_cast<CUkernel>(const_cast<void*>(func))) == CUDA_SUCCESS) {
    *out = reinterpret_cast<CUfunction>(const_cast<void*>(func));
    return cudaSuccess;
  }
  return fail(cudaErrorInvalidDeviceFunction);
}

// --- error texts
// ---------------------------------------------------------------------------------------------------------
struct ErrText {
  cudaError_t code;
  const char* name;
  const char* text;
};
const ErrText kErrors[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error"},
    {cudaErrorCudartUnloading, "cudaErrorCudartUnloading", "driver shutting down"},
    {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration", "invalid configuration argument"},
    {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection", "invalid copy direction for memcpy"},
    {cudaErrorInsufficientDriver, "cudaErrorInsufficientDriver",
     "CUDA driver version is insufficient for CUDA runtime version"},
    {cudaErrorInvalidDeviceFunction, "cudaErrorInvalidDeviceFunction", "invalid device function"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorSystemNotReady, "cudaErrorSystemNotReady", "system not yet initialized"},
    {cudaErrorSystemDriverMismatch, "cudaErrorSystemDriverMismatch",
     "system has unsupported display driver / cuda driver combination"},
    {cudaErrorCompatNotSupportedOnDevice, "cudaErrorCompatNotSupportedOnDevice",
     "forward compatibility was attempted on non supported HW"},
    {cudaErrorCallRequiresNewerDriver, "cudaErrorCallRequiresNewerDriver",
     "API call is not supported in the installed CUDA driver"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorDeviceUninitialized, "cudaErrorDeviceUninitialized", "invalid device context"},
    {cudaErrorInvalidKernelImage, "cudaErrorInvalidKernelImage", "device kernel image is invalid"},
    {cudaErrorNoKernelImageForDevice, "cudaErrorNoKernelImageForDevice",
     "no kernel image is available for execution on the device"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorIllegalState, "cudaErrorIllegalState",
     "the operation cannot be performed in the present state"},
    {cudaErrorSymbolNotFound, "cudaErrorSymbolNotFound", "named symbol not found"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
    {cudaErrorIllegalAddress, "cudaErrorIllegalAddress", "an illegal memory access was encountered"},
    {cudaErrorLaunchOutOfResources, "cudaErrorLaunchOutOfResources",
     "too many resources requested for launch"},
    {cudaErrorLaunchTimeout, "cudaErrorLaunchTimeout", "the launch timed out and was terminated"},
    {cudaErrorAssert, "cudaErrorAssert", "device-side assert triggered"},
    {cudaErrorHardwareStackError, "cudaErrorHardwareStackError", "hardware stack error"},
    {cudaErrorIllegalInstruction, "cudaErrorIllegalInstruction", "an illegal instruction was encountered"},
    {cudaErrorMisalignedAddress, "cudaErrorMisalignedAddress", "misaligned address"},
    {cudaErrorInvalidAddressSpace, "cudaErrorInvalidAddressSpace",
     "operation not supported on global/shared address space"},
    {cudaErrorInvalidPc, "cudaErrorInvalidPc", "invalid program counter"},
    {cudaErrorLaunchFailure, "cudaErrorLaunchFailure", "unspecified launch failure"},
    {cudaErrorCooperativeLaunchTooLarge, "cudaErrorCooperativeLaunchTooLarge",
     "too many blocks in cooperative launch"},
    {cudaErrorNotPermitted, "cudaErrorNotPermitted", "operation not permitted"},
    {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported"},
    {cudaErrorStreamCaptureUnsupported, "cudaErrorStreamCaptureUnsupported",
     "operation not permitted when stream is capturing"},
    {cudaErrorStreamCaptureInvalidated, "cudaErrorStreamCaptureInvalidated",
     "operation failed due to a previous error during capture"},
    {cudaErrorStreamCaptureMerge, "cudaErrorStreamCaptureMerge",
     "operation would result in a merge of separate capture sequences"},
    {cudaErrorStreamCaptureUnmatched, "cudaErrorStreamCaptureUnmatched",
     "capture was not ended in the same stream as it began"},
    {cudaErrorStreamCaptureUnjoined, "cudaErrorStreamCaptureUnjoined", "capturing stream has unjoined work"},
    {cudaErrorStreamCaptureIsolation, "cudaErrorStreamCaptureIsolation",
     "dependency created on uncaptured work in another stream"},
    {cudaErrorStreamCaptureImplicit, "cudaErrorStreamCaptureImplicit",
     "operation would make the legacy stream depend on a capturing blocking stream"},
    {cudaErrorCapturedEvent, "cudaErrorCapturedEvent",
     "operation not permitted on an event last recorded in a capturing stream"},
    {cudaErrorStreamCaptureWrongThread, "cudaErrorStreamCaptureWrongThread",
     "attempt to terminate a thread-local capture sequence from another thread"},
    {cudaErrorUnknown, "cudaErrorUnknown", "unknown error"},
};

const ErrText* find_error(cudaError_t e) {
  for (const ErrText& t : kErrors)
    if (t.code == e) return &t;
  return nullptr;
}

CUdeviceptr dp(const void* p) {
  return reinterpret_cast<CUdeviceptr>(p);
}

}  // namespace

// =====================================================================================================================
// nvcc host-registration ABI (crt/host_runtime.h, crt/device_functions.h)
// =====================================================================================================================

SIM_RT void** __cudaRegisterFatBinary(void* fatCubin) {
  auto* fb = new FatBinary{fatCubin};
  return reinterpret_cast<void**>(fb);
}

SIM_RT void __cudaRegisterFatBinaryEnd(void** /*handle*/) {}

// Called through atexit; kernels stay registered because other threads (or destructors) may still launch.
SIM_RT void __cudaUnregisterFatBinary(void** /*handle*/) {}

SIM_RT void __cudaRegisterFunction(void** handle, const char* hostFun, char* deviceFun,
                                   const char* /*deviceName*/, int, uint3*, uint3*, dim3*, dim3*, int*) {
  std::lock_guard<std::mutex> lk(reg_mu());
  kernels()[hostFun] = KernelReg{reinterpret_cast<FatBinary*>(handle), deviceFun};
}

SIM_RT void __cudaRegisterVar(void**, char*, char*, const char*, int, size_t, int, int) {}
SIM_RT void __cudaRegisterManagedVar(void**, void**, char*, const char*, int, size_t, int, int) {}
SIM_RT char __cudaInitModule(void** /*handle*/) {
  return 1;
}

SIM_RT unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shmem, struct CUstream_st* stream) {
  config_stack().push_back(LaunchConfig{grid, block, shmem, stream});
  return 0;
}

SIM_RT cudaError_t __cudaPopCallConfiguration(dim3* grid, dim3* block, size_t* shmem, void* stream) {
  if (config_stack().empty()) return fail(cudaErrorMissingConfiguration);
  const LaunchConfig c = config_stack().back();
  config_stack().pop_back();
  *grid = c.grid;
  *block = c.block;
  *shmem = c.shmem;
  *static_cast<cudaStream_t*>(stream) = c.stream;
  return cudaSuccess;
}

SIM_RT cudaError_t __cudaGetKernel(cudaKernel_t* out, const void* hostFun) {
  if (!out) return fail(cudaErrorInvalidValue);
  CUkernel k = nullptr;
  if (cudaError_t e = kernel_for_stub(hostFun, &k)) return fail(e);
  *out = reinterpret_cast<cudaKernel_t>(k);
  return cudaSuccess;
}

// =====================================================================================================================
// Launch API
// =====================================================================================================================

namespace {
cudaError_t launch(const void* func, dim3 g, dim3 b, void** args, size_t shmem, cudaStream_t s, bool ptsz) {
  CUfunction f = nullptr;
  if (cudaError_t e = resolve_launch_target(func, &f)) return e;
  auto fn = ptsz ? g_drv.LaunchKernel_ptsz : g_drv.LaunchKernel;
  return ret(fn(f, g.x, g.y, g.z, b.x, b.y, b.z, static_cast<unsigned>(shmem), s, args, nullptr));
}

cudaError_t launch_ex(const cudaLaunchConfig_t* c, const void* func, void** args, bool ptsz) {
  if (!c) return fail(cudaErrorInvalidValue);
  CUfunction f = nullptr;
  if (cudaError_t e = resolve_launch_target(func, &f)) return e;
  static_assert(sizeof(cudaLaunchAttribute) == sizeof(CUlaunchAttribute), "launch attribute layouts differ");
  CUlaunchConfig cfg{};
  cfg.gridDimX = c->gridDim.x;
  cfg.gridDimY = c->gridDim.y;
  cfg.gridDimZ = c->gridDim.z;
  cfg.blockDimX = c->blockDim.x;
  cfg.blockDimY = c->blockDim.y;
  cfg.blockDimZ = c->blockDim.z;
  cfg.sharedMemBytes = static_cast<unsigned>(c->dynamicSmemBytes);
  cfg.hStream = c->stream;
  cfg.attrs = reinterpret_cast<CUlaunchAttribute*>(c->attrs);
  cfg.numAttrs = c->numAttrs;
  return ret((ptsz ? g_drv.LaunchKernelEx_ptsz : g_drv.LaunchKernelEx)(&cfg, f, args, nullptr));
}

cudaError_t launch_coop(const void* func, dim3 g, dim3 b, void** args, size_t shmem, cudaStream_t s,
                        bool ptsz) {
  CUfunction f = nullptr;
  if (cudaError_t e = resolve_launch_target(func, &f)) return e;
  auto fn = ptsz ? g_drv.LaunchCooperativeKernel_ptsz : g_drv.LaunchCooperativeKernel;
  return ret(fn(f, g.x, g.y, g.z, b.x, b.y, b.z, static_cast<unsigned>(shmem), s, args));
}
}  // namespace

SIM_RT cudaError_t cudaFuncGetName(const char** name, const void* func) {
  if (!name || !func) return fail(cudaErrorInvalidValue);
  {
    std::lock_guard<std::mutex> lk(reg_mu());
    auto it = kernels().find(func);
    if (it != kernels().end()) {
      *name = it->second.name.c_str();
      return cudaSuccess;
    }
  }
  ENSURE();
  if (!g_drv.KernelGetName) return fail(cudaErrorCallRequiresNewerDriver);
  if (g_drv.KernelGetName(name, reinterpret_cast<CUkernel>(const_cast<void*>(func))) == CUDA_SUCCESS)
    return cudaSuccess;
  return fail(cudaErrorInvalidDeviceFunction);
}

SIM_RT cudaError_t cudaGetFuncBySymbol(cudaFunction_t* out, const void* symbol) {
  if (!out) return fail(cudaErrorInvalidValue);
  CUkernel k = nullptr;
  if (cudaError_t e = kernel_for_stub(symbol, &k)) return fail(e);
  CUfunction f = nullptr;
  if (CUresult r = g_drv.KernelGetFunction(&f, k)) return ret(r);
  *out = f;
  return cudaSuccess;
}

// =====================================================================================================================
// Device, streams, events
// =====================================================================================================================

SIM_RT cudaError_t cudaSetDevice(int d) {
  ENSURE();
  return d == 0 ? cudaSuccess : fail(cudaErrorInvalidDevice);
}
SIM_RT cudaError_t cudaGetDevice(int* d) {
  if (!d) return fail(cudaErrorInvalidValue);
  ENSURE();
  *d = 0;
  return cudaSuccess;
}
SIM_RT cudaError_t cudaDriverGetVersion(int* v) {
  if (!v) return fail(cudaErrorInvalidValue);
  std::call_once(g_init_once, init_driver);
  if (!g_drv.DriverGetVersion) {
    *v = 0;  // documented: 0 when no driver is installed
    return cudaSuccess;
  }
  return ret(g_drv.DriverGetVersion(v));
}
SIM_RT cudaError_t cudaRuntimeGetVersion(int* v) {
  refuse_reentry("cudaRuntimeGetVersion");
  if (!v) return fail(cudaErrorInvalidValue);
  *v = SIM_CUDART_VERSION;
  return cudaSuccess;
}
// A real reset destroys the primary context; the sim keeps it (documented as not modelled).
SIM_RT cudaError_t cudaDeviceReset(void) {
  return cudaSuccess;
}

SIM_RT cudaError_t cudaGetLastError(void) {
  refuse_reentry("cudaGetLastError");
  if (int s = g_sticky.load()) {
    t_last_error = cudaSuccess;
    return static_cast<cudaError_t>(s);
  }
  const cudaError_t e = t_last_error;
  t_last_error = cudaSuccess;
  return e;
}
SIM_RT cudaError_t cudaPeekAtLastError(void) {
  refuse_reentry("cudaPeekAtLastError");
  if (int s = g_sticky.load()) return static_cast<cudaError_t>(s);
  return t_last_error;
}
SIM_RT const char* cudaGetErrorName(cudaError_t e) {
  const ErrText* t = find_error(e);
  return t ? t->name : "unrecognized error code";
}
SIM_RT const char* cudaGetErrorString(cudaError_t e) {
  const ErrText* t = find_error(e);
  return t ? t->text : "unrecognized error code";
}

// =====================================================================================================================
// Memory
// =====================================================================================================================

SIM_RT cudaError_t cudaMalloc(void** p, size_t size) {
  if (!p) return fail(cudaErrorInvalidValue);
  ENSURE();
  if (size == 0) {  // the runtime answers a zero-byte request itself
    *p = nullptr;
    return cudaSuccess;
  }
  CUdeviceptr d = 0;
  if (CUresult r = g_drv.MemAlloc(&d, size)) return ret(r);
  *p = reinterpret_cast<void*>(d);
  return cudaSuccess;
}
SIM_RT cudaError_t cudaFree(void* p) {
  ENSURE();
  return p ? ret(g_drv.MemFree(dp(p))) : cudaSuccess;
}
SIM_RT cudaError_t cudaFreeHost(void* p) {
  ENSURE();
  return p ? ret(g_drv.MemFreeHost(p)) : cudaSuccess;
}
SIM_RT cudaError_t cudaHostGetDevicePointer(void** pd, void* ph, unsigned int flags) {
  if (!pd) return fail(cudaErrorInvalidValue);
  ENSURE();
  CUdeviceptr d = 0;
  if (CUresult r = g_drv.MemHostGetDevicePointer(&d, ph, flags)) return ret(r);
  *pd = reinterpret_cast<void*>(d);
  return cudaSuccess;
}

namespace {
cudaError_t memcpy_sync(void* dst, const void* src, size_t n, cudaMemcpyKind kind, bool ptds) {
  ENSURE();
  switch (kind) {
    case cudaMemcpyHostToDevice:
      return ret((ptds ? g_drv.MemcpyHtoD_ptds : g_drv.MemcpyHtoD)(dp(dst), src, n));
    case cudaMemcpyDeviceToHost:
      return ret((ptds ? g_drv.MemcpyDtoH_ptds : g_drv.MemcpyDtoH)(dst, dp(src), n));
    case cudaMemcpyDeviceToDevice:
      return ret((ptds ? g_drv.MemcpyDtoD_ptds : g_drv.MemcpyDtoD)(dp(dst), dp(src), n));
    case cudaMemcpyHostToHost:
    case cudaMemcpyDefault:
      return ret((ptds ? g_drv.Memcpy_ptds : g_drv.Memcpy)(dp(dst), dp(src), n));
  }
  return fail(cudaErrorInvalidMemcpyDirection);
}

cudaError_t memcpy_async(void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t s,
                         bool ptsz) {
  ENSURE();
  switch (kind) {
    case cudaMemcpyHostToDevice:
      return ret((ptsz ? g_drv.MemcpyHtoDAsync_ptsz : g_drv.MemcpyHtoDAsync)(dp(dst), src, n, s));
    case cudaMemcpyDeviceToHost:
      return ret((ptsz ? g_drv.MemcpyDtoHAsync_ptsz : g_drv.MemcpyDtoHAsync)(dst, dp(src), n, s));
    case cudaMemcpyDeviceToDevice:
    case cudaMemcpyHostToHost:
    case cudaMemcpyDefault:
      return ret((ptsz ? g_drv.MemcpyAsync_ptsz : g_drv.MemcpyAsync)(dp(dst), dp(src), n, s));
  }
  return fail(cudaErrorInvalidMemcpyDirection);
}
}  // namespace

// =====================================================================================================================
// The entry points that only forward: the rows of entry_points.def
// =====================================================================================================================

#define SIM_RUNTIME_FORWARD(function, parameters, call) \
  SIM_RT cudaError_t function parameters {              \
    return call;                                        \
  }
#define SIM_RUNTIME_PER_THREAD(function, per_thread_function, parameters, call) \
  SIM_RT cudaError_t function parameters {                                      \
    constexpr bool per_thread = false;                                          \
    return call;                                                                \
  }                                                                             \
  SIM_RT cudaError_t per_thread_function parameters {                           \
    constexpr bool per_thread = true;                                           \
    return call;                                                                \
  }
// A driver function an older driver lacks (needs_newer_driver) answers as the real runtime does there.
#define SIM_RUNTIME_DRIVER(function, parameters, driver_function, arguments)   \
  SIM_RT cudaError_t function parameters {                                     \
    ENSURE();                                                                  \
    if (!g_drv.driver_function) return fail(cudaErrorCallRequiresNewerDriver); \
    return ret(g_drv.driver_function arguments);                               \
  }
#define SIM_RUNTIME_DRIVER_CHECKED(function, parameters, required, driver_function, arguments) \
  SIM_RT cudaError_t function parameters {                                                     \
    if (!(required)) return fail(cudaErrorInvalidValue);                                       \
    ENSURE();                                                                                  \
    return ret(g_drv.driver_function arguments);                                               \
  }
#define SIM_RUNTIME_DRIVER_PER_THREAD(function, per_thread_function, parameters, driver_function, \
                                      per_thread_driver_function, arguments)                      \
  SIM_RUNTIME_DRIVER(function, parameters, driver_function, arguments)                            \
  SIM_RUNTIME_DRIVER(per_thread_function, parameters, per_thread_driver_function, arguments)
#include "entry_points.def"
// SPDX-License-Identifier: MIT
