// A CUDA program for the integration tests, built with g++ against the real CUDA headers and run on
// the simulated stack (tests/sim). Each scenario prints every CUDA result it gets, so a test can
// compare the program's view with and without the shim, and check what a blocked launch returns.
//
//   cuda_app steps | direct | exc | ptsz | streams | config-error | capture [replays] |
//            capture_branches [replays] | blocked-then-capture | capture-other-thread |
//            cublas | errno | unknown-stub | fork | fork-while-launching | fork-exec |
//            segv | abort | fpe | ill | bus | own-handler |
//            fault-then-alloc | fault-then-launch | fault-then-launch-other-stream | fault-then-copy |
//            fault-then-event-query | fault-then-exit | fault-then-launch-many | side-stream <order>
//
// Kernels: fill, stencil, scale (mangled names as nvcc gives them). Faults are injected by the test
// through CUDA_SIM_FAULT (e.g. stencil:13, the 13th stencil launch, launch #38 in `steps`).
//
// The fault-then-* scenarios: fill, then stencil (the line marked FAULT_LAUNCH; the test makes it fault with
// CUDA_SIM_FAULT=stencil:1), then one kind of call where a real GPU reports the fault (the simulated driver
// too, with CUDA_SIM_FAULT_SURFACES=next-call), as the programs in the field do. All exit 0.
//   fault-then-alloc               cudaMalloc, fill, stencil, then only cudaMalloc (CuPy's memory pool)
//   fault-then-launch              fill, stencil, then launch scale and cudaGetLastError (PyTorch: every
//                                  launch checked)
//   fault-then-launch-other-stream streams A and B: fill and stencil on A, scale on B, cudaGetLastError
//   fault-then-copy                cudaMalloc, fill, stencil, then a synchronous device-to-host cudaMemcpy
//   fault-then-event-query         an event recorded after fill (before the fault), queried after stencil
//   fault-then-exit                fill, stencil, then return from main: no further CUDA call
//   fault-then-launch-many         3 rounds of fill, stencil (line FAULT_LAUNCH_MANY), scale on the default
//                                  stream, cudaGetLastError after each launch; the test makes the second
//                                  stencil fault (CUDA_SIM_FAULT=stencil:2)
//
// side-stream <order>: what orders a side stream's work before the main stream's, as PyTorch's warm-up on a
// side stream before a graph capture does: fill on stream `side`, then <order>, then stencil twice on stream
// `main` (the test makes the second fault: CUDA_SIM_FAULT=stencil:2) and a synchronize of `main`. <order>:
//   wait         an event recorded on side, waited for by main (cudaStreamWaitEvent; torch's wait_stream)
//   wait-first   the same, but before the fill: it orders nothing of the fill
//   event-sync   an event recorded on side, synchronized on the host
//   event-query  the same, queried until it is ready
//   device-sync  cudaDeviceSynchronize
//   copy-dtoh    a synchronous device-to-host cudaMemcpy (the default stream only)
//   copy-dtod    a synchronous device-to-device cudaMemcpy (returns without waiting for anything)
//   none         nothing
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sim_kernels.h"

SIM_KERNEL(fill, "_Z4fillPfif");
SIM_KERNEL(stencil, "_Z7stencilPfPKfix");
SIM_KERNEL(scale, "_Z5scalePfif");
// Named as NCCL 2.19+ names its all-reduce kernel (the simulated stack runs no device code).
SIM_KERNEL(nccl_all_reduce, "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE");

namespace {

const dim3 kGrid(4096);
const dim3 kBlock(256);

int report(const char* what, int result) {
  if (result != 0) std::printf("%s returned %d\n", what, result);
  return result;
}

// 20 steps of fill, stencil, scale on one stream, checked only at the end, as many programs do.
int steps(const std::string& how, cudaStream_t stream) {
  int launch_number = 0;
  for (int step = 0; step < 20; ++step) {
    for (sim::Stub kernel : {sim::Stub(fill), sim::Stub(stencil), sim::Stub(scale)}) {
      ++launch_number;
      cudaError_t result;
      void* args[1] = {nullptr};
      if (how == "direct") {
        result = cudaLaunchKernel(reinterpret_cast<const void*>(kernel), kGrid, kBlock, args, 0, stream);
      } else if (how == "exc") {
        cudaLaunchConfig_t config{};
        config.gridDim = kGrid;
        config.blockDim = kBlock;
        config.stream = stream;
        result = cudaLaunchKernelExC(&config, reinterpret_cast<const void*>(kernel), args);
      } else if (how == "ptsz") {
        result = sim::launch_ptsz(kernel, kGrid, kBlock, stream);
      } else {
        result = sim::launch(kernel, kGrid, kBlock, stream);  // LAUNCH_DEFAULT
      }
      if (result != cudaSuccess) std::printf("launch %d returned %d\n", launch_number, result);
    }
  }
  std::vector<float> host(16);
  float* device = nullptr;
  report("cudaMalloc", cudaMalloc(reinterpret_cast<void**>(&device), host.size() * sizeof(float)));
  int copy = report("cudaMemcpy",
                    cudaMemcpy(host.data(), device, host.size() * sizeof(float), cudaMemcpyDeviceToHost));
  report("cudaGetLastError", cudaGetLastError());
  std::printf("done\n");
  return copy == 0 ? 0 : 1;
}

int streams() {
  cudaStream_t s[4];
  for (cudaStream_t& stream : s) report("cudaStreamCreate", cudaStreamCreate(&stream));
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 4; ++i) report("launch", sim::launch(i == 2 ? stencil : fill, kGrid, kBlock, s[i]));
  }
  int result = report("cudaDeviceSynchronize", cudaDeviceSynchronize());
  std::printf("done\n");
  return result == 0 ? 0 : 1;
}

// Waits for its work as PyTorch's NCCL watchdog and caching allocator do: by querying an event recorded after
// it, until it is no longer "not ready" (the first call to see a fault in the launches before it).
int event_query() {
  cudaStream_t stream;
  report("cudaStreamCreate", cudaStreamCreate(&stream));
  for (sim::Stub kernel : {sim::Stub(fill), sim::Stub(stencil), sim::Stub(scale)})
    report("launch", sim::launch(kernel, kGrid, kBlock, stream));
  cudaEvent_t done;
  report("cudaEventCreate", cudaEventCreate(&done));
  report("cudaEventRecord", cudaEventRecord(done, stream));
  cudaError_t result;
  while ((result = cudaEventQuery(done)) == cudaErrorNotReady) {
  }
  report("cudaEventQuery", result);
  std::printf("done\n");
  return result == cudaSuccess ? 0 : 1;
}

int config_error() {
  report("launch", sim::launch(fill, kGrid, dim3(2048), nullptr));
  report("cudaGetLastError", cudaGetLastError());
  report("cudaGetLastError again", cudaGetLastError());
  report("launch", sim::launch(scale, kGrid, kBlock, nullptr));
  report("cudaDeviceSynchronize", cudaDeviceSynchronize());
  std::printf("done\n");
  return 0;
}

// Ends the capture on `stream`, instantiates its graph and replays it `replays` times, each waited for.
int end_capture_and_replay(cudaStream_t stream, int replays) {
  cudaGraph_t graph = nullptr;
  report("cudaStreamEndCapture", cudaStreamEndCapture(stream, &graph));
  std::printf("graph %s\n", graph ? "captured" : "missing");
  cudaGraphExec_t exec = nullptr;
  if (graph) report("cudaGraphInstantiate", cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 0; replay < replays; ++replay) {
    if (exec) report("cudaGraphLaunch", cudaGraphLaunch(exec, stream));
    report("cudaStreamSynchronize", cudaStreamSynchronize(stream));
  }
  std::printf("done\n");
  return graph ? 0 : 1;
}

int capture(int replays) {
  cudaStream_t stream;
  report("cudaStreamCreate", cudaStreamCreate(&stream));
  report("cudaStreamBeginCapture",
         cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));  // CAPTURE_BEGIN
  for (sim::Stub kernel : {sim::Stub(fill), sim::Stub(stencil), sim::Stub(scale)})
    report("launch", sim::launch(kernel, kGrid, kBlock, stream));  // CAPTURE_LAUNCH
  return end_capture_and_replay(stream, replays);                  // `capture 3`: three replays
}

// A capture that forks to a second stream and joins back (events): stream A captures fill, then B (joined
// through an event) stencil while A runs scale (two parallel branches), then A waits for B and runs fill
// again. The graph's 4 nodes: fill (A), stencil (B), scale (A), fill (A). `capture_branches 3`: three
// replays, each waited for.
int capture_branches(int replays) {
  cudaStream_t a, b;
  report("cudaStreamCreate", cudaStreamCreate(&a));
  report("cudaStreamCreate", cudaStreamCreate(&b));
  cudaEvent_t forked, joined;
  report("cudaEventCreateWithFlags", cudaEventCreateWithFlags(&forked, cudaEventDisableTiming));
  report("cudaEventCreateWithFlags", cudaEventCreateWithFlags(&joined, cudaEventDisableTiming));
  report("cudaStreamBeginCapture", cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal));  // BRANCHES_BEGIN
  report("launch", sim::launch(fill, kGrid, kBlock, a));  // BRANCHES_FIRST_FILL
  report("cudaEventRecord", cudaEventRecord(forked, a));
  report("cudaStreamWaitEvent", cudaStreamWaitEvent(b, forked, 0));  // b joins the capture
  report("launch", sim::launch(stencil, kGrid, kBlock, b));          // BRANCHES_STENCIL
  report("launch", sim::launch(scale, kGrid, kBlock, a));            // BRANCHES_SCALE
  report("cudaEventRecord", cudaEventRecord(joined, b));
  report("cudaStreamWaitEvent", cudaStreamWaitEvent(a, joined, 0));  // back into a
  report("launch", sim::launch(fill, kGrid, kBlock, a));             // BRANCHES_LAST_FILL
  return end_capture_and_replay(a, replays);
}

// Blocked launches before any capture, then a capture, then launches again: the shim checks for
// captures only from the first one on (tests count the driver's capture queries).
int blocked_then_capture() {
  cudaStream_t stream;
  report("cudaStreamCreate", cudaStreamCreate(&stream));
  for (int i = 0; i < 3; ++i) report("launch", sim::launch(fill, kGrid, kBlock, stream));
  report("cudaStreamBeginCapture", cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  for (sim::Stub kernel : {sim::Stub(stencil), sim::Stub(scale)})
    report("launch (captured)", sim::launch(kernel, kGrid, kBlock, stream));
  cudaGraph_t graph = nullptr;
  report("cudaStreamEndCapture", cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec = nullptr;
  if (graph) report("cudaGraphInstantiate", cudaGraphInstantiate(&exec, graph, 0));
  if (exec) report("cudaGraphLaunch", cudaGraphLaunch(exec, stream));
  report("launch", sim::launch(fill, kGrid, kBlock, stream));
  report("cudaStreamSynchronize", cudaStreamSynchronize(stream));
  std::printf("done\n");
  return graph ? 0 : 1;
}

// Another thread captures in global mode while this one launches on an unrelated stream: blocking
// that launch must not invalidate the other thread's capture.
int capture_other_thread() {
  cudaStream_t captured, other;
  report("cudaStreamCreate", cudaStreamCreate(&captured));
  report("cudaStreamCreate", cudaStreamCreate(&other));
  std::mutex mutex;
  std::condition_variable changed;
  int phase = 0;
  cudaGraph_t graph = nullptr;
  std::thread capturer([&] {
    report("cudaStreamBeginCapture", cudaStreamBeginCapture(captured, cudaStreamCaptureModeGlobal));
    report("launch (captured)", sim::launch(fill, kGrid, kBlock, captured));
    {
      std::lock_guard<std::mutex> lock(mutex);
      phase = 1;
    }
    changed.notify_all();
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return phase == 2; });
    report("cudaStreamEndCapture", cudaStreamEndCapture(captured, &graph));
  });
  {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return phase == 1; });
  }
  report("launch (other stream)", sim::launch(scale, kGrid, kBlock, other));
  {
    std::lock_guard<std::mutex> lock(mutex);
    phase = 2;
  }
  changed.notify_all();
  capturer.join();
  std::printf("graph %s\n", graph ? "captured" : "missing");
  std::printf("done\n");
  return graph ? 0 : 1;
}

int cublas() {
  cublasHandle_t handle = nullptr;
  report("cublasCreate", cublasCreate(&handle));
  const int n = 64;
  float *a = nullptr, *b = nullptr, *c = nullptr;
  report("cudaMalloc", cudaMalloc(reinterpret_cast<void**>(&b), n * n * sizeof(float)));
  report("cudaMalloc", cudaMalloc(reinterpret_cast<void**>(&c), n * n * sizeof(float)));
  a = reinterpret_cast<float*>(0xdead0000);  // the bug: an operand that is not device memory
  const float alpha = 1.0f, beta = 0.0f;
  std::printf("cublasSgemm returned %d\n",
              cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a, n, b, n, &beta, c, n));
  report("cudaDeviceSynchronize", cudaDeviceSynchronize());
  std::printf("done\n");
  return 0;
}

// A launch of a function that is no kernel: the shim's attempt to name it fails too, and the
// program must see only the launch's own error, once.
void not_a_kernel() {}

int unknown_stub() {
  void* args[1] = {nullptr};
  report("cudaLaunchKernel",
         cudaLaunchKernel(reinterpret_cast<const void*>(not_a_kernel), kGrid, kBlock, args, 0, nullptr));
  report("cudaGetLastError", cudaGetLastError());
  report("cudaGetLastError again", cudaGetLastError());
  report("launch", sim::launch(fill, kGrid, kBlock, nullptr));
  report("cudaGetLastError after a good launch", cudaGetLastError());
  std::printf("done\n");
  return 0;
}

// A child forked after launches, exiting normally (destructors run): the shim's summary must stay the
// parent's alone.
int fork_child() {
  for (int i = 0; i < 3; ++i) report("launch", sim::launch(fill, kGrid, kBlock, nullptr));
  report("cudaDeviceSynchronize", cudaDeviceSynchronize());
  pid_t child = fork();
  if (child == 0) std::exit(0);
  int status = 0;
  waitpid(child, &status, 0);
  std::printf("child exited %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  std::printf("done\n");
  return 0;
}

// Forks 20 children while another thread keeps launching (so the shim's locks are often held at the fork).
// Each child makes CUDA calls, which fail as CUDA does in a forked child (cudaErrorInitializationError),
// and exits normally; a child that inherited a held lock would hang here.
int fork_while_launching() {
  report("launch", sim::launch(fill, kGrid, kBlock, nullptr));
  std::atomic<bool> stop{false};
  std::thread busy([&] {
    cudaStream_t stream = nullptr;
    cudaStreamCreate(&stream);
    while (!stop.load()) sim::launch(scale, dim3(64), dim3(128), stream);
  });
  int exited = 0;
  for (int i = 0; i < 20; ++i) {
    pid_t child = fork();
    if (child == 0) {
      int launch = static_cast<int>(sim::launch(stencil, kGrid, kBlock, nullptr));
      int sync = static_cast<int>(cudaDeviceSynchronize());
      std::printf("child: launch returned %d, cudaDeviceSynchronize returned %d\n", launch, sync);
      std::exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) ++exited;
  }
  stop.store(true);
  busy.join();
  std::printf("%d children exited 0\ndone\n", exited);
  return 0;
}

// Dies of a fatal signal after some launches: a fault in the program (segv), abort(), or a fault its own
// handler deals with (own-handler: prints and exits 3). The exit status must be the same with the shim.
void on_own_handler(int number) {
  const char text[] = "own handler: signal caught\n";
  ssize_t ignored = write(STDOUT_FILENO, text, sizeof(text) - 1);
  (void)ignored;
  (void)number;
  _exit(3);
}

int die(const std::string& how) {
  if (how == "own-handler") signal(SIGSEGV, on_own_handler);
  for (int i = 0; i < 3; ++i) report("launch", sim::launch(fill, kGrid, kBlock, nullptr));
  report("cudaDeviceSynchronize", cudaDeviceSynchronize());
  std::fflush(stdout);
  if (how == "abort") std::abort();
  if (how == "ill") __builtin_trap();  // ud2 on x86-64, brk on aarch64 (SIGTRAP there)
  if (how == "bus") {
    // Touching a mapped page beyond the end of its (empty) file.
    char path[] = "/tmp/cuda_app_busXXXXXX";
    int fd = mkstemp(path);
    unlink(path);
    auto* page = static_cast<volatile char*>(mmap(nullptr, 4096, PROT_READ, MAP_SHARED, fd, 0));
    if (page != MAP_FAILED) (void)page[0];
  }
  if (how == "fpe") {
    // Both volatile: GCC turns 1 / x into comparisons, with no division to fault.
    volatile int dividend = 7, zero = 0;
    volatile int quotient = dividend / zero;
    (void)quotient;
  }
  volatile int* nowhere = nullptr;
  *nowhere = 1;
  return 0;
}

// A rank stuck in a collective, aborted by its watchdog: an all-reduce on its own stream never completes (the
// test holds it with CUDA_SIM_FAULT, which nothing waits for), other work does, then abort().
// `signal_number`: how it ends, as an NCCL watchdog ends it (SIGABRT) or as torchrun does when another rank
// failed (SIGTERM).
int stuck_collective(int signal_number) {
  cudaStream_t collectives = nullptr;
  report("cudaStreamCreate", cudaStreamCreate(&collectives));
  for (int i = 0; i < 2; ++i) report("launch", sim::launch(fill, kGrid, kBlock, nullptr));
  report("launch", sim::launch(nccl_all_reduce, dim3(8), dim3(512), collectives));
  report("launch", sim::launch(scale, kGrid, kBlock, nullptr));
  std::fflush(stdout);
  if (signal_number == SIGABRT) std::abort();
  kill(getpid(), signal_number);
  return 0;
}

// A CUDA program that runs a program which is not one (as build scripts and launchers do).
int fork_exec() {
  report("launch", sim::launch(fill, kGrid, kBlock, nullptr));
  report("cudaDeviceSynchronize", cudaDeviceSynchronize());
  std::fflush(stdout);
  pid_t child = fork();
  if (child == 0) {
    execl("/bin/sh", "sh", "-c", "echo exec: not a CUDA program", static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  waitpid(child, &status, 0);
  std::printf("child exited %d\ndone\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return 0;
}

int errno_kept() {
  float* device = nullptr;
  report("cudaMalloc", cudaMalloc(reinterpret_cast<void**>(&device), 64));
  float host[16] = {};
  errno = EDOM;
  report("cudaMemcpy", cudaMemcpy(device, host, sizeof(host), cudaMemcpyHostToDevice));
  std::printf("errno after cudaMemcpy: %d\n", errno);
  errno = ERANGE;
  report("launch", sim::launch(fill, kGrid, kBlock, nullptr));
  std::printf("errno after launch: %d\n", errno);
  errno = EDOM;
  report("cudaDeviceSynchronize", cudaDeviceSynchronize());
  std::printf("errno after cudaDeviceSynchronize: %d\n", errno);
  return 0;
}

// fill, then the stencil launch that the fault-then-* scenarios make fault (CUDA_SIM_FAULT=stencil:1), on
// `stream`; `after_fill`, if given, is recorded between the two.
void fill_then_faulting_stencil(cudaStream_t stream, cudaEvent_t after_fill = nullptr) {
  report("launch fill", sim::launch(fill, kGrid, kBlock, stream));
  if (after_fill) report("cudaEventRecord", cudaEventRecord(after_fill, stream));
  report("launch stencil", sim::launch(stencil, kGrid, kBlock, stream));  // FAULT_LAUNCH
}

int fault_then(const std::string& what) {
  if (what == "alloc") {
    float* first = nullptr;
    report("cudaMalloc", cudaMalloc(reinterpret_cast<void**>(&first), 1024 * sizeof(float)));
    fill_then_faulting_stencil(nullptr);
    float* second = nullptr;
    report("cudaMalloc", cudaMalloc(reinterpret_cast<void**>(&second), 1024 * sizeof(float)));
  } else if (what == "launch") {
    fill_then_faulting_stencil(nullptr);
    report("launch scale", sim::launch(scale, kGrid, kBlock, nullptr));
    report("cudaGetLastError", cudaGetLastError());
  } else if (what == "launch-other-stream") {
    cudaStream_t a = nullptr, b = nullptr;
    report("cudaStreamCreate", cudaStreamCreate(&a));
    report("cudaStreamCreate", cudaStreamCreate(&b));
    fill_then_faulting_stencil(a);
    report("launch scale", sim::launch(scale, kGrid, kBlock, b));
    report("cudaGetLastError", cudaGetLastError());
  } else if (what == "copy") {
    std::vector<float> host(16);
    float* device = nullptr;
    report("cudaMalloc", cudaMalloc(reinterpret_cast<void**>(&device), host.size() * sizeof(float)));
    fill_then_faulting_stencil(nullptr);
    report("cudaMemcpy",
           cudaMemcpy(host.data(), device, host.size() * sizeof(float), cudaMemcpyDeviceToHost));
  } else if (what == "event-query") {
    cudaEvent_t after_fill = nullptr;
    report("cudaEventCreate", cudaEventCreate(&after_fill));
    fill_then_faulting_stencil(nullptr, after_fill);
    report("cudaEventQuery", cudaEventQuery(after_fill));
  } else if (what == "exit") {
    fill_then_faulting_stencil(nullptr);
  } else {
    return -1;
  }
  std::printf("done\n");
  return 0;
}

// 3 rounds of fill, stencil, scale on the default stream, each launch checked with cudaGetLastError as
// PyTorch does; the test makes the second stencil fault (CUDA_SIM_FAULT=stencil:2).
int fault_then_launch_many() {
  for (int round = 1; round <= 3; ++round) {
    const std::string at = " (round " + std::to_string(round) + ")";
    report(("launch fill" + at).c_str(), sim::launch(fill, kGrid, kBlock, nullptr));
    report(("cudaGetLastError after fill" + at).c_str(), cudaGetLastError());
    report(("launch stencil" + at).c_str(), sim::launch(stencil, kGrid, kBlock));  // FAULT_LAUNCH_MANY
    report(("cudaGetLastError after stencil" + at).c_str(), cudaGetLastError());
    report(("launch scale" + at).c_str(), sim::launch(scale, kGrid, kBlock, nullptr));
    report(("cudaGetLastError after scale" + at).c_str(), cudaGetLastError());
  }
  std::printf("done\n");
  return 0;
}

int side_stream(const std::string& order) {
  cudaStream_t side = nullptr, main_stream = nullptr;
  report("cudaStreamCreateWithFlags", cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
  report("cudaStreamCreateWithFlags", cudaStreamCreateWithFlags(&main_stream, cudaStreamNonBlocking));
  cudaEvent_t ready = nullptr;
  report("cudaEventCreate", cudaEventCreate(&ready));
  float* buffers[2] = {nullptr, nullptr};
  for (float*& buffer : buffers)
    report("cudaMalloc", cudaMalloc(reinterpret_cast<void**>(&buffer), 1024 * sizeof(float)));
  std::vector<float> host(1024);
  auto wait_on_side = [&] {
    report("cudaEventRecord", cudaEventRecord(ready, side));
    report("cudaStreamWaitEvent", cudaStreamWaitEvent(main_stream, ready, 0));
  };
  if (order == "wait-first") wait_on_side();
  report("launch fill", sim::launch(fill, kGrid, kBlock, side));
  if (order == "wait") {
    wait_on_side();
  } else if (order == "event-sync" || order == "event-query") {
    report("cudaEventRecord", cudaEventRecord(ready, side));
    if (order == "event-sync") {
      report("cudaEventSynchronize", cudaEventSynchronize(ready));
    } else {
      cudaError_t result;
      while ((result = cudaEventQuery(ready)) == cudaErrorNotReady) {
      }
      report("cudaEventQuery", result);
    }
  } else if (order == "device-sync") {
    report("cudaDeviceSynchronize", cudaDeviceSynchronize());
  } else if (order == "copy-dtoh") {
    report("cudaMemcpy", cudaMemcpy(host.data(), buffers[0], 1024 * sizeof(float), cudaMemcpyDeviceToHost));
  } else if (order == "copy-dtod") {
    report("cudaMemcpy", cudaMemcpy(buffers[1], buffers[0], 1024 * sizeof(float), cudaMemcpyDeviceToDevice));
  } else if (order != "none" && order != "wait-first") {
    return -1;
  }
  for (int round = 1; round <= 2; ++round)
    report("launch stencil", sim::launch(stencil, kGrid, kBlock, main_stream));  // SIDE_STREAM_STENCIL
  report("cudaStreamSynchronize", cudaStreamSynchronize(main_stream));
  std::printf("done\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IONBF, 0);  // output order must not depend on buffering
  std::string scenario = argc > 1 ? argv[1] : "steps";
  if (scenario == "steps" || scenario == "direct" || scenario == "exc" || scenario == "ptsz")
    return steps(scenario, nullptr);
  if (scenario == "streams") return streams();
  if (scenario == "config-error") return config_error();
  if (scenario == "event-query") return event_query();
  if (scenario == "capture") return capture(argc > 2 ? std::atoi(argv[2]) : 1);
  if (scenario == "capture_branches") return capture_branches(argc > 2 ? std::atoi(argv[2]) : 1);
  if (scenario == "blocked-then-capture") return blocked_then_capture();
  if (scenario == "capture-other-thread") return capture_other_thread();
  if (scenario == "cublas") return cublas();
  if (scenario == "errno") return errno_kept();
  if (scenario == "unknown-stub") return unknown_stub();
  if (scenario == "fork") return fork_child();
  if (scenario == "fork-while-launching") return fork_while_launching();
  if (scenario == "fork-exec") return fork_exec();
  if (scenario == "stuck-collective") return stuck_collective(SIGABRT);
  if (scenario == "stuck-collective-term") return stuck_collective(SIGTERM);
  if (scenario == "fault-then-launch-many") return fault_then_launch_many();
  if (scenario == "side-stream" && argc > 2) {
    int result = side_stream(argv[2]);
    if (result >= 0) return result;
  }
  if (scenario.rfind("fault-then-", 0) == 0) {
    const int result = fault_then(scenario.substr(11));
    if (result >= 0) return result;
  }
  if (scenario == "segv" || scenario == "abort" || scenario == "own-handler" || scenario == "fpe" ||
      scenario == "ill" || scenario == "bus")
    return die(scenario);
  std::fprintf(stderr, "cuda_app: unknown scenario '%s'\n", scenario.c_str());
  return 2;
}
// SPDX-License-Identifier: MIT
