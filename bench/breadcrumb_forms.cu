// Benchmark for issue 21: what a breadcrumb (a stream write of the launch's number after each launch, read by
// the host after a sticky fault to tell how far each stream got) costs in other forms than the shim's current
// one, cuStreamWriteValue64_v2 into pinned host-mapped memory (shim/breadcrumbs.cpp). No shim needed: an empty
// kernel, <<<1, 1>>> on a created non-blocking stream (or the legacy default stream), N launches a round, each
// form timed as "launch + form" on the host (steady_clock, the stream synchronized before the clock stops), the
// forms alternated within each round (the order rotated from one round to the next) and each compared with
// "launch alone" of the same round. The forms (the table kForms drives the loop):
//   a    launch alone
//   b    + cuStreamWriteValue64_v2, pinned host-mapped memory (cuMemHostAlloc DEVICEMAP|PORTABLE): the shim's
//   c    + cuStreamWriteValue32_v2, the same memory (the number truncated to 32 bits)
//   d    + cuStreamBatchMemOp_v2, one CU_STREAM_MEM_OP_WRITE_VALUE_64
//   e    + cuStreamWriteValue64_v2 into device memory (cuMemAlloc)
//   f    + cuStreamWriteValue64_v2 with CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER (cuda.h: "not supported in the
//        v2 API"), and f1/f2 the v1 cuStreamWriteValue64 without and with the flag, where the driver still has
//        it; cost only, see kNoBarrierNote
//   g2..g16  one write after every k-th launch (k = 2, 4, 8, 16): the culprit is then one of at most k launches
//   h1   + cuStreamWriteValue64_v2 into managed memory (cuMemAllocManaged)
//   h2   + cuStreamWriteValue64_v2 into a malloc'd page registered with cuMemHostRegister
// A form the device does not support (its attribute says so) or whose call fails is skipped, the reason
// printed. After each round the slot is read back: it must hold the last number written.
//
// The second mode asks whether the host can still read each kind of memory after a sticky fault: per kind, in
// a fresh child process (fork + exec of this program, as the fault ruins the context), 10 good launches each
// followed by a write of its number, a launch that stores through an invalid pointer followed by its write
// (11), 3 more launches and writes, cudaDeviceSynchronize (an illegal address expected), then the slot read:
// host memory by a plain load, device memory by cuMemcpyDtoH (expected to fail). Prints a line a kind,
// "fault-read <kind>: <value or error> (expected 10)".
//
// The driver functions are taken from the runtime (cudaGetDriverEntryPointByVersion), as the shim calls them
// through pointers too, and so that without a driver the program says so (exit 1) instead of failing to load.
//
// Run (at most 14 forms x 7 rounds x 20,000 launches x about 5 us: some 10-15 s on an H200; the fault mode, 4
// processes, a few s):
//   build/bench/breadcrumb_forms 20000 7      timing: per-round lines, a line a form, then a markdown table
//                                             "| form | ns/launch median | spread | added over launch alone |"
//   build/bench/breadcrumb_forms fault        readability after a sticky fault, a line a memory kind
//   build/bench/breadcrumb_forms 5000 7 10000  the same with a kernel that spins 10 us on the GPU instead of
//                                             the empty one: bound by the GPU, so "added" is the write's cost
//                                             to the GPU between two kernels, not to the host
//   build/bench/breadcrumb_forms 20000 7 0 legacy  the same on the legacy default stream, where PyTorch and a
//                                             plain <<<>>> launch go (issue 21: the shim's breadcrumbs cost
//                                             more there than the created stream's write)
//   build/bench/breadcrumb_forms 5000 5 0 legacy 20000  the same with host work between launches: 20,000 steps of
//                                             a random read-modify-write walk over 1 MiB (about 30 us, as a
//                                             PyTorch loop's Python runs between its launches): "added" then
//                                             also holds whatever a form slows the host's own work by (issue
//                                             21: breadcrumbs cost a training loop more than their calls take)
//   build/bench/breadcrumb_forms 4000 5 0 legacy 3000 64  a walk over 64 MiB, more than the last-level cache
//                                             (3,000 steps: some 30 us, as the walk's loads overlap): each
//                                             launch's path then runs with cold caches, as between the launches
//                                             of a program with a large working set (PyTorch's; issue 21: there
//                                             breadcrumbs cost 2.4-3.3 us a launch, in a tight loop 1.1-1.7)
//   breadcrumb_forms [launches=20000] [rounds=7] [kernel_ns=0] [created|legacy] [host_work=0] [work_mib=1] | fault
//                                             (fault-child <kind>: the child's mode)
#include <cuda.h>
#include <cuda_runtime.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

__global__ void empty_kernel() {}

// The third argument's kernel: spins for `ns` of the GPU's global timer, so that the loop is bound by the GPU,
// not by the host's launches, and "added" is what a write costs the GPU between two kernels.
__global__ void spin_kernel(unsigned long long ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}
unsigned long long g_kernel_ns = 0;  // 0: the empty kernel

// Stores through its pointer: given an address that is never mapped, an illegal address (a sticky fault).
__global__ void poke(int* target) { *target = 1; }

// The driver functions used, taken through the runtime at the versions this program was built against (so the
// v2 memory operations), the v1 cuStreamWriteValue64 at CUDA 11.0's. Only functions whose signature is the
// same at that version as the header's declaration: "cuCtxGetDevice" at 13.0 is cuCtxGetDevice_v2, which takes
// a context too (the first H200 run crashed calling it with one argument), so the device comes from cuDeviceGet.
struct Driver {
  decltype(&cuGetErrorName) get_error_name = nullptr;
  decltype(&cuDriverGetVersion) driver_version = nullptr;
  decltype(&cuDeviceGet) device_get = nullptr;
  decltype(&cuDeviceGetAttribute) device_attribute = nullptr;
  decltype(&cuMemHostAlloc) mem_host_alloc = nullptr;
  decltype(&cuMemHostGetDevicePointer) mem_host_device_pointer = nullptr;
  decltype(&cuMemHostRegister) mem_host_register = nullptr;
  decltype(&cuMemAlloc) mem_alloc = nullptr;
  decltype(&cuMemAllocManaged) mem_alloc_managed = nullptr;
  decltype(&cuMemcpyDtoH) memcpy_dtoh = nullptr;
  decltype(&cuMemcpyHtoD) memcpy_htod = nullptr;
  decltype(&cuStreamWriteValue32) write32 = nullptr;
  decltype(&cuStreamWriteValue64) write64 = nullptr;
  decltype(&cuStreamBatchMemOp) batch_mem_op = nullptr;
  decltype(&cuStreamWriteValue64) write64_v1 = nullptr;  // may stay null: the driver need not have it
  std::string write64_v1_problem;
};
Driver driver;

// Loads `symbol` at `version`; the reason it cannot, or "".
template <typename Function>
std::string load(Function& function, const char* symbol, unsigned version) {
  void* pointer = nullptr;
  cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
  cudaError_t error = cudaGetDriverEntryPointByVersion(symbol, &pointer, version, cudaEnableDefault, &status);
  std::string what = std::string(symbol) + " (cudaVersion " + std::to_string(version) + ")";
  if (error != cudaSuccess) return what + ": " + cudaGetErrorName(error);
  if (status != cudaDriverEntryPointSuccess || !pointer)
    return what + (status == cudaDriverEntryPointVersionNotSufficent ? ": the driver lacks this version"
                                                                     : ": not found in the driver");
  function = reinterpret_cast<Function>(pointer);
  return "";
}

std::string load_driver() {
  const unsigned v = CUDA_VERSION;
  for (const std::string& problem :
       {load(driver.get_error_name, "cuGetErrorName", v), load(driver.driver_version, "cuDriverGetVersion", v),
        load(driver.device_get, "cuDeviceGet", v), load(driver.device_attribute, "cuDeviceGetAttribute", v),
        load(driver.mem_host_alloc, "cuMemHostAlloc", v),
        load(driver.mem_host_device_pointer, "cuMemHostGetDevicePointer", v),
        load(driver.mem_host_register, "cuMemHostRegister", v), load(driver.mem_alloc, "cuMemAlloc", v),
        load(driver.mem_alloc_managed, "cuMemAllocManaged", v), load(driver.memcpy_dtoh, "cuMemcpyDtoH", v),
        load(driver.memcpy_htod, "cuMemcpyHtoD", v), load(driver.write32, "cuStreamWriteValue32", v),
        load(driver.write64, "cuStreamWriteValue64", v), load(driver.batch_mem_op, "cuStreamBatchMemOp", v)}) {
    if (!problem.empty()) return problem;
  }
  driver.write64_v1_problem = load(driver.write64_v1, "cuStreamWriteValue64", 11000);
  return "";
}

std::string result_name(CUresult result) {
  const char* name = nullptr;
  if (driver.get_error_name && driver.get_error_name(result, &name) == CUDA_SUCCESS && name) return name;
  return "CUresult " + std::to_string(static_cast<int>(result));
}

std::string call_failed(const char* call, CUresult result) { return std::string(call) + ": " + result_name(result); }

// Where the breadcrumb goes.
enum class Kind { Pinned, Device, Managed, Registered };
struct KindInfo {
  Kind kind;
  const char* name;         // the fault mode's argument and line
  const char* description;
};
const KindInfo kKinds[] = {
    {Kind::Pinned, "pinned", "pinned host-mapped memory (cuMemHostAlloc DEVICEMAP|PORTABLE), read by a host load"},
    {Kind::Device, "device", "device memory (cuMemAlloc), read by cuMemcpyDtoH"},
    {Kind::Managed, "managed", "managed memory (cuMemAllocManaged, ATTACH_GLOBAL), read by a host load"},
    {Kind::Registered, "registered",
     "a malloc'd page registered with cuMemHostRegister (DEVICEMAP|PORTABLE), read by a host load"},
};

// The device attributes that decide which forms may run (-1: the query failed, decided by trying).
struct Attributes {
  int mem_ops_64 = -1, mem_ops_v1 = -1, mem_ops_64_v1 = -1, wait_value_nor = -1, map_host = -1,
      unified_addressing = -1, managed = -1, concurrent_managed = -1, host_register = -1, pageable_access = -1;
};
Attributes attributes;

void query_attributes(bool print) {
  CUdevice device = 0;
  if (driver.device_get(&device, 0) != CUDA_SUCCESS) return;
  struct Row {
    int* value;
    CUdevice_attribute attribute;
    const char* name;
  };
  const Row rows[] = {
      {&attributes.mem_ops_64, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, "CAN_USE_64_BIT_STREAM_MEM_OPS"},
      {&attributes.mem_ops_v1, CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1, "CAN_USE_STREAM_MEM_OPS_V1"},
      {&attributes.mem_ops_64_v1, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS_V1,
       "CAN_USE_64_BIT_STREAM_MEM_OPS_V1"},
      {&attributes.wait_value_nor, CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR,
       "CAN_USE_STREAM_WAIT_VALUE_NOR (waits only; no form here needs it)"},
      {&attributes.map_host, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, "CAN_MAP_HOST_MEMORY"},
      {&attributes.unified_addressing, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, "UNIFIED_ADDRESSING"},
      {&attributes.managed, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, "MANAGED_MEMORY"},
      {&attributes.concurrent_managed, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, "CONCURRENT_MANAGED_ACCESS"},
      {&attributes.host_register, CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED, "HOST_REGISTER_SUPPORTED"},
      {&attributes.pageable_access, CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS, "PAGEABLE_MEMORY_ACCESS"},
  };
  for (const Row& row : rows) {
    CUresult result = driver.device_attribute(row.value, row.attribute, device);
    if (result != CUDA_SUCCESS) *row.value = -1;
    if (print && result != CUDA_SUCCESS)
      std::printf("device attribute %s: query failed (%s)\n", row.name, result_name(result).c_str());
    else if (print)
      std::printf("device attribute %s: %d\n", row.name, *row.value);
  }
}

// The reason memory of this kind cannot be had on this device, by its attributes, or "".
std::string kind_unsupported(Kind kind) {
  if (kind == Kind::Pinned && attributes.map_host == 0) return "CAN_MAP_HOST_MEMORY is 0";
  if (kind == Kind::Managed && attributes.managed == 0) return "MANAGED_MEMORY is 0";
  if (kind == Kind::Registered && attributes.host_register == 0) return "HOST_REGISTER_SUPPORTED is 0";
  return "";
}

constexpr size_t kPage = 4096;

// One slot of one kind of memory (never freed: the process ends soon, and the GPU may write into it until
// then).
struct Target {
  Kind kind = Kind::Pinned;
  CUdeviceptr address = 0;                // what the stream writes
  volatile cuuint64_t* host = nullptr;    // the host's view; null for device memory
  std::string problem;                    // why there is none, or ""
};

Target allocate(Kind kind) {
  Target target;
  target.kind = kind;
  target.problem = kind_unsupported(kind);
  if (!target.problem.empty()) return target;
  CUresult result = CUDA_SUCCESS;
  void* host = nullptr;
  switch (kind) {
    case Kind::Pinned:
      if ((result = driver.mem_host_alloc(&host, kPage, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE)) !=
          CUDA_SUCCESS)
        target.problem = call_failed("cuMemHostAlloc", result);
      break;
    case Kind::Device:
      if ((result = driver.mem_alloc(&target.address, kPage)) != CUDA_SUCCESS)
        target.problem = call_failed("cuMemAlloc", result);
      break;
    case Kind::Managed:
      if ((result = driver.mem_alloc_managed(&target.address, kPage, CU_MEM_ATTACH_GLOBAL)) != CUDA_SUCCESS)
        target.problem = call_failed("cuMemAllocManaged", result);
      else
        host = reinterpret_cast<void*>(target.address);
      break;
    case Kind::Registered:
      host = std::aligned_alloc(kPage, kPage);
      if (!host) {
        target.problem = "aligned_alloc of a page failed";
        break;
      }
      std::memset(host, 0, kPage);
      if ((result = driver.mem_host_register(host, kPage, CU_MEMHOSTREGISTER_DEVICEMAP |
                                                              CU_MEMHOSTREGISTER_PORTABLE)) != CUDA_SUCCESS)
        target.problem = call_failed("cuMemHostRegister", result);
      break;
  }
  if (!target.problem.empty()) return target;
  if (kind == Kind::Pinned || kind == Kind::Registered) {
    if ((result = driver.mem_host_device_pointer(&target.address, host, 0)) != CUDA_SUCCESS) {
      target.problem = call_failed("cuMemHostGetDevicePointer", result);
      return target;
    }
  }
  target.host = static_cast<volatile cuuint64_t*>(host);
  return target;
}

// The slot's value, read as the host would after a fault: a load, or a copy for device memory. Only when the
// stream is idle.
struct Reading {
  bool ok = false;
  cuuint64_t value = 0;
  std::string error;
};

Reading read_slot(const Target& target) {
  Reading reading;
  if (target.host) {
    reading.value = *target.host;
    reading.ok = true;
    return reading;
  }
  CUresult result = driver.memcpy_dtoh(&reading.value, target.address, sizeof reading.value);
  reading.ok = result == CUDA_SUCCESS;
  if (!reading.ok) reading.error = call_failed("cuMemcpyDtoH", result);
  return reading;
}

// Zeroes the slot (the stream idle).
void clear_slot(const Target& target) {
  if (target.host) {
    *target.host = 0;
    return;
  }
  const cuuint64_t zero = 0;
  driver.memcpy_htod(target.address, &zero, sizeof zero);
}

// How the breadcrumb is written.
enum class Op { None, Write64, Write32, Batch64, Write64NoBarrier, Write64V1, Write64V1NoBarrier };

const char* op_call(Op op) {
  switch (op) {
    case Op::None: return "nothing";
    case Op::Write64: return "cuStreamWriteValue64_v2";
    case Op::Write32: return "cuStreamWriteValue32_v2";
    case Op::Batch64: return "cuStreamBatchMemOp_v2";
    case Op::Write64NoBarrier: return "cuStreamWriteValue64_v2 with NO_MEMORY_BARRIER";
    case Op::Write64V1: return "cuStreamWriteValue64 (v1)";
    case Op::Write64V1NoBarrier: return "cuStreamWriteValue64 (v1) with NO_MEMORY_BARRIER";
  }
  return "?";
}

// Enqueues the write of `number` into the slot; with the batch, the parameters built per call as the shim
// would.
CUresult write_crumb(Op op, CUstream stream, CUdeviceptr address, cuuint64_t number) {
  switch (op) {
    case Op::None:
      return CUDA_SUCCESS;
    case Op::Write64:
      return driver.write64(stream, address, number, 0);
    case Op::Write32:
      return driver.write32(stream, address, static_cast<cuuint32_t>(number), 0);
    case Op::Batch64: {
      CUstreamBatchMemOpParams params;
      std::memset(&params, 0, sizeof params);
      params.writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
      params.writeValue.address = address;
      params.writeValue.value64 = number;
      params.writeValue.flags = 0;
      return driver.batch_mem_op(stream, 1, &params, 0);
    }
    case Op::Write64NoBarrier:
      return driver.write64(stream, address, number, CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER);
    case Op::Write64V1:
      return driver.write64_v1(stream, address, number, 0);
    case Op::Write64V1NoBarrier:
      return driver.write64_v1(stream, address, number, CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER);
  }
  return CUDA_ERROR_INVALID_VALUE;
}

const char* const kTruncatedNote =
    "the 32-bit write keeps the launch number's low 32 bits only; still exact if the host restores the high 32 "
    "bits from the last number it issued on that stream (a stream's launches not yet finished span far fewer "
    "than 2^32 numbers), not from the slot alone";
const char* const kNoBarrierNote =
    "cost only, not a candidate: the default write carries a memory barrier (like __threadfence_system(), scoped "
    "to the stream) that orders it after the previous kernel's memory writes; CU_STREAM_WRITE_VALUE_NO_MEMORY_"
    "BARRIER lets it be reordered with them, so the slot might say a launch finished before its effects (and, "
    "the driver does not promise otherwise, before its fault) were seen: not exact. cuda.h says the flag is not "
    "supported in the v2 API (where the v2 call takes it anyway, the driver may ignore it), hence the v1 rows, "
    "where the driver still has the v1 call";
const char* const kEveryNote =
    "one write per k launches: after a fault the slot names the last multiple of k reached, so the culprit is "
    "one of the (at most k) launches after it, not named exactly";

struct Form {
  const char* label;
  const char* name;
  Op op;
  Kind kind;
  int every;         // a write after every k-th launch
  const char* note;  // printed under the table, or null
};

const Form kForms[] = {
    {"a", "launch alone", Op::None, Kind::Pinned, 1, nullptr},
    {"b", "+ cuStreamWriteValue64_v2, pinned host-mapped (the shim's)", Op::Write64, Kind::Pinned, 1, nullptr},
    {"c", "+ cuStreamWriteValue32_v2, pinned host-mapped", Op::Write32, Kind::Pinned, 1, kTruncatedNote},
    {"d", "+ cuStreamBatchMemOp_v2, one WRITE_VALUE_64, pinned host-mapped", Op::Batch64, Kind::Pinned, 1,
     nullptr},
    {"e", "+ cuStreamWriteValue64_v2, device memory (cuMemAlloc)", Op::Write64, Kind::Device, 1, nullptr},
    {"f", "+ cuStreamWriteValue64_v2, NO_MEMORY_BARRIER, pinned host-mapped", Op::Write64NoBarrier, Kind::Pinned,
     1, kNoBarrierNote},
    {"f1", "+ cuStreamWriteValue64 (v1), pinned host-mapped", Op::Write64V1, Kind::Pinned, 1, nullptr},
    {"f2", "+ cuStreamWriteValue64 (v1), NO_MEMORY_BARRIER, pinned host-mapped", Op::Write64V1NoBarrier,
     Kind::Pinned, 1, kNoBarrierNote},
    {"g2", "+ cuStreamWriteValue64_v2 after every 2nd launch, pinned host-mapped", Op::Write64, Kind::Pinned, 2,
     kEveryNote},
    {"g4", "+ cuStreamWriteValue64_v2 after every 4th launch, pinned host-mapped", Op::Write64, Kind::Pinned, 4,
     kEveryNote},
    {"g8", "+ cuStreamWriteValue64_v2 after every 8th launch, pinned host-mapped", Op::Write64, Kind::Pinned, 8,
     kEveryNote},
    {"g16", "+ cuStreamWriteValue64_v2 after every 16th launch, pinned host-mapped", Op::Write64, Kind::Pinned, 16,
     kEveryNote},
    {"h1", "+ cuStreamWriteValue64_v2, managed (cuMemAllocManaged)", Op::Write64, Kind::Managed, 1, nullptr},
    {"h2", "+ cuStreamWriteValue64_v2, malloc'd page, cuMemHostRegister", Op::Write64, Kind::Registered, 1,
     nullptr},
};
constexpr int kFormCount = sizeof kForms / sizeof kForms[0];

// The reason the device cannot run this write, by its attributes, or "".
std::string op_unsupported(Op op) {
  const bool v1 = op == Op::Write64V1 || op == Op::Write64V1NoBarrier;
  const bool bits64 = op != Op::None && op != Op::Write32;
  if (v1 && !driver.write64_v1) return driver.write64_v1_problem;
  if (v1 && (attributes.mem_ops_v1 == 0 || attributes.mem_ops_64_v1 == 0))
    return "CAN_USE_STREAM_MEM_OPS_V1 or CAN_USE_64_BIT_STREAM_MEM_OPS_V1 is 0 (the v1 calls are off)";
  if (!v1 && bits64 && attributes.mem_ops_64 == 0) return "CAN_USE_64_BIT_STREAM_MEM_OPS is 0";
  return "";
}

// The number the slot holds after `launches` launches of this form (cleared before them): the last multiple
// of `every`, truncated as written; 0 where nothing writes.
cuuint64_t expected_slot(const Form& form, int launches) {
  if (form.op == Op::None) return 0;
  cuuint64_t last = static_cast<cuuint64_t>(launches / form.every * form.every);
  return form.op == Op::Write32 ? static_cast<cuuint32_t>(last) : last;
}

struct Round {
  double ns = 0;       // host time per launch
  std::string error;   // a call that failed, or ""
  bool slot_ok = false;
  cuuint64_t slot = 0;
};

bool g_context_broken = false;

// The fifth argument's host work between launches: steps of a dependent random walk that reads and writes a
// buffer of the sixth argument's size (MiB, a power of two), a fixed amount of work (not of time), so that a form
// that slows the host's memory or caches makes it take longer, and a buffer larger than the caches leaves each
// launch's path to run cold.
long g_host_work = 0;
std::vector<uint64_t> g_work_buffer;
uint64_t g_work_state = 1;

void host_work() {
  uint64_t x = g_work_state;
  const uint64_t mask = g_work_buffer.size() - 1;
  for (long i = 0; i < g_host_work; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    g_work_buffer[(x >> 24) & mask] += x;
  }
  g_work_state = x;
}

// `launches` launches of the form, timed from the first to the stream's completion of the last.
Round run_round(const Form& form, const Target& target, cudaStream_t stream, int launches) {
  Round round;
  CUstream cu_stream = reinterpret_cast<CUstream>(stream);
  clear_slot(target);
  int countdown = form.every;
  CUresult failed = CUDA_SUCCESS;
  auto start = std::chrono::steady_clock::now();
  for (int i = 1; i <= launches; ++i) {
    if (g_kernel_ns)
      spin_kernel<<<1, 1, 0, stream>>>(g_kernel_ns);
    else
      empty_kernel<<<1, 1, 0, stream>>>();
    if (--countdown == 0) {
      countdown = form.every;
      if ((failed = write_crumb(form.op, cu_stream, target.address, static_cast<cuuint64_t>(i))) != CUDA_SUCCESS)
        break;
    }
    if (g_host_work) host_work();
  }
  cudaError_t synchronized = cudaStreamSynchronize(stream);
  auto stop = std::chrono::steady_clock::now();
  cudaError_t launched = cudaGetLastError();
  if (synchronized != cudaSuccess || launched != cudaSuccess) {
    cudaError_t error = synchronized != cudaSuccess ? synchronized : launched;
    round.error = std::string("the stream: ") + cudaGetErrorName(error) + " (" + cudaGetErrorString(error) + ")";
    g_context_broken = synchronized != cudaSuccess;
    return round;
  }
  if (failed != CUDA_SUCCESS) {
    round.error = call_failed(op_call(form.op), failed);
    return round;
  }
  round.ns = std::chrono::duration<double, std::nano>(stop - start).count() / launches;
  Reading reading = read_slot(target);
  round.slot = reading.value;
  round.slot_ok = reading.ok && reading.value == expected_slot(form, launches);
  if (!reading.ok) round.error = "slot unreadable: " + reading.error;
  return round;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

struct Outcome {
  std::string skipped;        // why it did not run, or ""
  std::vector<double> ns;     // per round
  std::vector<double> added;  // per round, over launch alone of the same round
  int slot_ok = 0;
};

int no_device(const char* call, cudaError_t error) {
  std::fprintf(stderr, "no CUDA device: %s: %s (%s)\n", call, cudaGetErrorName(error), cudaGetErrorString(error));
  return 1;
}

// A device, a context on it, the driver functions: 0, or 1 with the reason printed.
int start_cuda(bool describe) {
  int devices = 0;
  cudaError_t error = cudaGetDeviceCount(&devices);
  if (error != cudaSuccess) return no_device("cudaGetDeviceCount", error);
  if (devices == 0) {
    std::fprintf(stderr, "no CUDA device: cudaGetDeviceCount found none\n");
    return 1;
  }
  if ((error = cudaSetDevice(0)) != cudaSuccess) return no_device("cudaSetDevice(0)", error);
  if ((error = cudaFree(nullptr)) != cudaSuccess) return no_device("creating the context (cudaFree(0))", error);
  std::string problem = load_driver();
  if (!problem.empty()) {
    std::fprintf(stderr, "no CUDA device: a driver function is missing: %s\n", problem.c_str());
    return 1;
  }
  if (describe) {
    cudaDeviceProp properties{};
    cudaGetDeviceProperties(&properties, 0);
    int version = 0;
    driver.driver_version(&version);
    std::printf("device 0: %s (sm_%d%d), driver API %d.%d, built against %d.%d\n", properties.name,
                properties.major, properties.minor, version / 1000, version % 1000 / 10, CUDA_VERSION / 1000,
                CUDA_VERSION % 1000 / 10);
    std::printf("v1 %s\n", driver.write64_v1 ? "cuStreamWriteValue64 (cudaVersion 11000): found"
                                              : driver.write64_v1_problem.c_str());
  }
  return 0;
}

int timing_mode(int launches, int rounds, bool legacy_stream) {
  if (int failed = start_cuda(true)) return failed;
  query_attributes(true);
  cudaStream_t stream = cudaStreamLegacy;
  cudaError_t error = cudaSuccess;
  if (!legacy_stream && (error = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)) != cudaSuccess)
    return no_device("cudaStreamCreateWithFlags", error);
  std::printf("stream: %s\n", legacy_stream ? "the legacy default stream (cudaStreamLegacy, CU_STREAM_LEGACY)"
                                             : "a created non-blocking stream");

  std::vector<Target> targets;
  for (const KindInfo& kind : kKinds) {
    targets.push_back(allocate(kind.kind));
    std::printf("target %s: %s%s%s\n", kind.name, kind.description, targets.back().problem.empty() ? "" : ": ",
                targets.back().problem.c_str());
  }
  auto target_of = [&](const Form& form) -> const Target& { return targets[static_cast<int>(form.kind)]; };

  // Warm-up: module load, and each form tried once; a form whose write fails or leaves the wrong number is
  // set aside with its reason.
  for (int i = 0; i < 1000; ++i) empty_kernel<<<1, 1, 0, stream>>>();
  if ((error = cudaStreamSynchronize(stream)) != cudaSuccess) return no_device("the warm-up launches", error);
  std::vector<Outcome> outcomes(kFormCount);
  std::vector<int> active;
  const int warm_up = std::min(launches, 2000);
  for (int f = 0; f < kFormCount; ++f) {
    const Form& form = kForms[f];
    std::string& skipped = outcomes[f].skipped;
    skipped = target_of(form).problem.empty() ? op_unsupported(form.op) : "no target: " + target_of(form).problem;
    if (skipped.empty()) {
      Round round = run_round(form, target_of(form), stream, warm_up);
      if (!round.error.empty())
        skipped = round.error;
      else if (!round.slot_ok)
        skipped = "the slot read back " + std::to_string(round.slot) + ", not " +
                  std::to_string(expected_slot(form, warm_up));
    }
    if (g_context_broken) {
      std::fprintf(stderr, "form %s broke the context (%s); stopping\n", form.label, skipped.c_str());
      return 1;
    }
    if (skipped.empty())
      active.push_back(f);
    else
      std::printf("form %s skipped: %s\n", form.label, skipped.c_str());
  }
  if (active.empty() || active[0] != 0) {
    std::fprintf(stderr, "launch alone did not run; nothing to compare with\n");
    return 1;
  }

  std::printf("%d launches a round, %d rounds, %zu forms; ns per launch (host time, stream synchronized)\n",
              launches, rounds, active.size());
  for (int r = 0; r < rounds; ++r) {
    std::vector<double> this_round(kFormCount, 0);
    for (size_t j = 0; j < active.size(); ++j) {
      int f = active[(j + r) % active.size()];
      Round round = run_round(kForms[f], target_of(kForms[f]), stream, launches);
      if (!round.error.empty()) {
        std::fprintf(stderr, "round %d, form %s: %s\n", r + 1, kForms[f].label, round.error.c_str());
        return 1;
      }
      this_round[f] = round.ns;
      outcomes[f].ns.push_back(round.ns);
      outcomes[f].slot_ok += round.slot_ok ? 1 : 0;
    }
    std::printf("round %d:", r + 1);
    for (int f : active) {
      outcomes[f].added.push_back(this_round[f] - this_round[0]);
      std::printf(" %s=%.0f", kForms[f].label, this_round[f]);
    }
    std::printf("\n");
  }

  std::printf("\n");
  for (int f = 0; f < kFormCount; ++f) {
    const Outcome& outcome = outcomes[f];
    if (!outcome.skipped.empty()) continue;
    auto [low, high] = std::minmax_element(outcome.ns.begin(), outcome.ns.end());
    std::printf("form %-3s %-72s median %7.1f ns/launch [%.1f-%.1f], added %+7.1f ns (median over rounds), "
                "slot right %d/%d\n",
                kForms[f].label, kForms[f].name, median(outcome.ns), *low, *high, median(outcome.added),
                outcome.slot_ok, rounds);
  }
  std::printf("\n| form | ns/launch median | spread | added over launch alone |\n|---|---|---|---|\n");
  for (int f = 0; f < kFormCount; ++f) {
    const Outcome& outcome = outcomes[f];
    if (!outcome.skipped.empty()) {
      std::printf("| %s. %s | skipped: %s | | |\n", kForms[f].label, kForms[f].name, outcome.skipped.c_str());
      continue;
    }
    auto [low, high] = std::minmax_element(outcome.ns.begin(), outcome.ns.end());
    char added[32] = "-";
    if (f != 0) std::snprintf(added, sizeof added, "%+.0f ns", median(outcome.added));
    std::printf("| %s. %s%s | %.0f | %.0f-%.0f | %s |\n", kForms[f].label, kForms[f].name,
                outcome.slot_ok == rounds ? "" : " (slot read back wrong)", median(outcome.ns), *low, *high, added);
  }
  std::printf("\n%d launches a round, %d rounds, forms alternated (order rotated each round); added: the median "
              "over rounds of the form's ns/launch minus launch alone's in the same round.\n",
              launches, rounds);
  const char* printed[kFormCount] = {};
  int notes = 0;
  for (int f = 0; f < kFormCount; ++f) {
    const char* note = kForms[f].note;
    if (!note || std::find(printed, printed + notes, note) != printed + notes) continue;
    printed[notes++] = note;
    std::string labels;
    for (int g = f; g < kFormCount; ++g)
      if (kForms[g].note == note) labels += (labels.empty() ? "" : ", ") + std::string(kForms[g].label);
    std::printf("%s: %s.\n", labels.c_str(), note);
  }
  return 0;
}

// The fault mode's child: the sequence on one kind of memory, then the slot read.
int fault_child(const char* kind_name) {
  const KindInfo* kind = nullptr;
  for (const KindInfo& info : kKinds)
    if (std::strcmp(info.name, kind_name) == 0) kind = &info;
  if (!kind) {
    std::printf("fault-read %s: no such kind (expected 10)\n", kind_name);
    return 1;
  }
  if (int failed = start_cuda(false)) return failed;
  query_attributes(false);
  Target target = allocate(kind->kind);
  if (!target.problem.empty()) {
    std::printf("fault-read %s: unavailable: %s (expected 10)\n", kind->name, target.problem.c_str());
    return 0;
  }
  if (attributes.mem_ops_64 == 0) {
    std::printf("fault-read %s: untested: CAN_USE_64_BIT_STREAM_MEM_OPS is 0 (expected 10)\n", kind->name);
    return 0;
  }
  cudaStream_t stream = nullptr;
  if (cudaError_t error = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking); error != cudaSuccess)
    return no_device("cudaStreamCreateWithFlags", error);
  clear_slot(target);
  CUstream cu_stream = reinterpret_cast<CUstream>(stream);
  std::string enqueue_errors;
  constexpr int kGood = 10, kAfter = 3;
  for (int number = 1; number <= kGood + 1 + kAfter; ++number) {
    if (number == kGood + 1)
      poke<<<1, 1, 0, stream>>>(reinterpret_cast<int*>(0x10));
    else
      empty_kernel<<<1, 1, 0, stream>>>();
    CUresult result = write_crumb(Op::Write64, cu_stream, target.address, static_cast<cuuint64_t>(number));
    if (result != CUDA_SUCCESS && enqueue_errors.empty())
      enqueue_errors = "write " + std::to_string(number) + ": " + result_name(result);
  }
  cudaError_t synchronized = cudaDeviceSynchronize();
  std::printf("fault %s: launches 1-%d good, %d stores through 0x10, %d-%d after; cudaDeviceSynchronize: %s%s%s\n",
              kind->name, kGood, kGood + 1, kGood + 2, kGood + 1 + kAfter, cudaGetErrorName(synchronized),
              enqueue_errors.empty() ? "" : "; first failed enqueue: ", enqueue_errors.c_str());
  std::printf("fault %s: reading the slot (%s)\n", kind->name, kind->description);
  Reading reading = read_slot(target);
  if (reading.ok)
    std::printf("fault-read %s: %llu (expected %d)\n", kind->name, static_cast<unsigned long long>(reading.value),
                kGood);
  else
    std::printf("fault-read %s: %s (expected %d)\n", kind->name, reading.error.c_str(), kGood);
  return 0;
}

// Runs `self fault-child <kind>` for each kind, passing its output on; says so where a child stopped before
// its fault-read line.
int fault_mode(const char* self) {
  if (int failed = start_cuda(true)) return failed;  // fail early, here, without a device
  std::fflush(stdout);
  int missing = 0;
  for (const KindInfo& kind : kKinds) {
    int pipe_ends[2];
    if (pipe(pipe_ends) != 0) {
      std::perror("pipe");
      return 1;
    }
    pid_t child = fork();
    if (child < 0) {
      std::perror("fork");
      return 1;
    }
    if (child == 0) {
      dup2(pipe_ends[1], STDOUT_FILENO);
      dup2(pipe_ends[1], STDERR_FILENO);
      close(pipe_ends[0]);
      close(pipe_ends[1]);
      execl("/proc/self/exe", self, "fault-child", kind.name, static_cast<char*>(nullptr));
      std::printf("fault-read %s: exec of /proc/self/exe failed: %s (expected 10)\n", kind.name,
                  std::strerror(errno));
      std::fflush(stdout);
      _exit(127);
    }
    close(pipe_ends[1]);
    std::string output;
    char buffer[4096];
    for (ssize_t got; (got = read(pipe_ends[0], buffer, sizeof buffer)) != 0;) {
      if (got < 0) {
        if (errno == EINTR) continue;
        break;
      }
      output.append(buffer, static_cast<size_t>(got));
    }
    close(pipe_ends[0]);
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    std::fputs(output.c_str(), stdout);
    if (output.find("fault-read " + std::string(kind.name) + ":") == std::string::npos) {
      ++missing;
      std::string how = WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
                                                  strsignal(WTERMSIG(status)) + ")"
                                            : "exited " + std::to_string(WEXITSTATUS(status));
      std::printf("fault-read %s: the child %s before its read was reported (expected 10)\n", kind.name,
                  how.c_str());
    }
    std::fflush(stdout);
  }
  return missing ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  if (argc > 1 && std::strcmp(argv[1], "fault") == 0) return fault_mode(argv[0]);
  if (argc > 2 && std::strcmp(argv[1], "fault-child") == 0) {
    std::setvbuf(stdout, nullptr, _IONBF, 0);
    return fault_child(argv[2]);
  }
  int launches = argc > 1 ? std::atoi(argv[1]) : 20000;
  int rounds = argc > 2 ? std::atoi(argv[2]) : 7;
  long long kernel_ns = argc > 3 ? std::atoll(argv[3]) : 0;
  const char* stream = argc > 4 ? argv[4] : "created";
  g_host_work = argc > 5 ? std::atol(argv[5]) : 0;
  long work_mib = argc > 6 ? std::atol(argv[6]) : 1;
  bool legacy = std::strcmp(stream, "legacy") == 0;
  if (launches <= 0 || rounds <= 0 || kernel_ns < 0 || g_host_work < 0 || work_mib <= 0 || work_mib > 4096 ||
      (work_mib & (work_mib - 1)) != 0 || (!legacy && std::strcmp(stream, "created") != 0)) {
    std::fprintf(stderr,
                 "usage: %s [launches=20000] [rounds=7] [kernel_ns=0] [created|legacy] [host_work=0] "
                 "[work_mib=1, a power of two up to 4096] | fault\n",
                 argv[0]);
    return 2;
  }
  g_kernel_ns = static_cast<unsigned long long>(kernel_ns);
  if (g_kernel_ns) std::printf("kernel: spins %llu ns on the GPU's global timer (GPU-bound)\n", g_kernel_ns);
  if (g_host_work) {
    g_work_buffer.assign(static_cast<size_t>(work_mib) << 17, 0);  // 8-byte cells: 2^17 a MiB
    std::printf("host work between launches: %ld steps of a random walk over %ld MiB\n", g_host_work, work_mib);
  }
  return timing_mode(launches, rounds, legacy);
}
// SPDX-License-Identifier: MIT
