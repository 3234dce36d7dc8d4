// Device-side breadcrumbs (see breadcrumbs.h).
#include "breadcrumbs.h"

#include <atomic>
#include <cstring>
#include <string>

#include "blocking.h"

namespace blockrun::shim {

namespace {

constexpr uint32_t kSlots = 4096;  // streams with a breadcrumb (32 KiB); later streams go without

enum class State : int { Untried, SettingUp, Ready, Unavailable };
std::atomic<State> g_state{State::Untried};
CUdeviceptr g_base = 0;  // the slots' device address (with unified addressing, the same for every context)

// Allocates the slots; the reason it cannot, or "".
std::string set_up(Engine& engine) {
  auto get_device = helper<Helper::cuCtxGetDevice>();
  auto attribute = helper<Helper::cuDeviceGetAttribute>();
  auto allocate = helper<Helper::cuMemHostAlloc>();
  auto device_pointer = helper<Helper::cuMemHostGetDevicePointer_v2>();
  if (!get_device || !attribute || !allocate || !device_pointer || !helper<Helper::cuStreamWriteValue64_v2>())
    return "the driver lacks cuStreamWriteValue64_v2 or the pinned-memory functions";
  CUdevice device = 0;
  if (get_device(&device) != CUDA_SUCCESS) return "no CUDA context was current at the first launch";
  int supported = 0;
  if (attribute(&supported, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, device) != CUDA_SUCCESS ||
      !supported)
    return "the device does not support 64-bit stream memory operations "
           "(CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS)";
  void* host = nullptr;
  if (allocate(&host, kSlots * sizeof(uint64_t), CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE) !=
          CUDA_SUCCESS ||
      !host)
    return "cuMemHostAlloc of the slots failed";
  std::memset(host, 0, kSlots * sizeof(uint64_t));
  if (device_pointer(&g_base, host, 0) != CUDA_SUCCESS)
    return "cuMemHostGetDevicePointer of the slots failed";
  // Never freed: the GPU may write into it until the process ends.
  engine.set_breadcrumbs(static_cast<volatile uint64_t*>(host), kSlots);
  return "";
}

}  // namespace

void set_up_breadcrumbs(Engine& engine) {
  State untried = State::Untried;
  if (g_state.load(std::memory_order_acquire) != State::Untried ||
      !g_state.compare_exchange_strong(untried, State::SettingUp))
    return;  // done, or being done by another thread (whose launches meanwhile go without)
  // The first launch may go into a capture: allocating pinned memory is then an unsafe call that would
  // invalidate it, unless this thread's capture mode is relaxed meanwhile.
  auto exchange_mode = helper<Helper::cuThreadExchangeStreamCaptureMode>();
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  bool relaxed = capture_has_begun() && exchange_mode && exchange_mode(&mode) == CUDA_SUCCESS;
  std::string problem = set_up(engine);
  if (relaxed) exchange_mode(&mode);
  g_state.store(problem.empty() ? State::Ready : State::Unavailable, std::memory_order_release);
  if (!problem.empty())
    engine.report_shim_problem("breadcrumbs unavailable: " + problem +
                               "; errors are localized from the host's view (suspects)");
}

namespace {

// A write that fails (a context already broken) only makes the breadcrumbs say less; the program never sees
// it.
CUresult write_slot(CUstream stream, int32_t slot, uint64_t value) {
  return helper<Helper::cuStreamWriteValue64_v2>()(
      stream, g_base + static_cast<CUdeviceptr>(slot) * sizeof(uint64_t), value, 0);
}

}  // namespace

bool drop_breadcrumb(LaunchPath& path, const Launch& launch, const void* stream, bool per_thread) {
  if (g_state.load(std::memory_order_acquire) != State::Ready) return false;
  CUstream cu_stream = driver_stream(stream, per_thread);
  if (launch.record.in_capture) {
    // Captured: a node after the launch's own, which on every replay writes the launch's capture position.
    return launch.graph_slot >= 0 &&
           write_slot(cu_stream, launch.graph_slot, launch.capture_position) == CUDA_SUCCESS;
  }
  // The stream's slot from its first launch, written or not: a stream with a slot is one whose launches the
  // breadcrumbs account for (a fatal signal's in-flight list names them while none was written yet).
  int32_t slot = path.breadcrumb_slot(launch);
  if (slot < 0) return false;
  if (!path.takes_breadcrumb(launch)) return false;  // --breadcrumb-every N: not this one
  if (may_be_capturing(cu_stream)) return false;     // could not tell: a write would join a graph unrecorded
  // Only a write in the stream lets the slot tell that this launch did not complete.
  if (write_slot(cu_stream, slot, launch.record.sequence) != CUDA_SUCCESS) return false;
  path.breadcrumb_enqueued(launch);
  return true;
}

void reset_graph_breadcrumbs(LaunchPath& path, const Launch& launch, const void* stream, bool per_thread) {
  if (g_state.load(std::memory_order_acquire) != State::Ready || launch.record.in_capture) return;
  const std::vector<GraphBranch>* branches = path.graph_branches(launch.record);
  if (!branches) return;
  CUstream cu_stream = driver_stream(stream, per_thread);
  if (may_be_capturing(cu_stream)) return;
  // In stream order: after the previous replay's writes, before this replay's.
  for (const GraphBranch& branch : *branches) {
    if (branch.slot >= 0) write_slot(cu_stream, branch.slot, 0);
  }
}

}  // namespace blockrun::shim
// SPDX-License-Identifier: MIT
