// Concurrency on the simulated stack, for the tests of pinning a fault whose launch has no stable global
// ordinal, or whose error surfaces far from it (issue 38; the sim's counterparts of
// tests/gpu/threads_ptds.cu, streams_events.cu and late_culprit_static.cu). Every launch is on a line of its
// own that ends with a marker comment (FAULT-LINE and the kernel's name) so that tests find its file:line.
// Prints each non-zero CUDA result as `<what> returned <code>`, then `done`; exits 1 if any CUDA call failed.
//
//   concurrent_app threads [N] [M]  N threads (4), M launches each (64) of `accumulate`, interleaved
//   concurrent_app streams [K]      K rounds (8) of `produce` on P, `consume` on C, joined by an event
//   concurrent_app many [L]         `lookup` once, L launches (500) of `scale`, a synchronous cudaMemcpy
//
// threads: threads `worker<i>` (i from 0) launch on their per-thread default streams (the _ptsz path), worker
// i with a grid of (i + 1) * 4096 blocks. They take turns, and a seeded std::mt19937 picks whose turn is
// next, so that the global order of the launches is the same for one seed and differs between seeds. The
// seed: the integer in the file CONCURRENT_SEED_FILE names (0 if there is none), which is then replaced by
// seed+1, so that the runs of one command (`cuda-blockrun --localize`) interleave differently; else
// CONCURRENT_SEED; else 1. The seed goes to stderr, and with CONCURRENT_TRACE=1 each launch too
// (`worker<i> launch <n>`, in the global order). After all launches the threads synchronize their own
// streams one after the other, in index order, so that the output depends on the seed alone. A fault that
// belongs to one thread's data is injected with CUDA_SIM_FAULT_THREAD (tests/sim/README.md):
//   CUDA_SIM_FAULT=accumulate:31 CUDA_SIM_FAULT_THREAD=worker2 CUDA_SIM_FAULT_SURFACES=sync
//   CUDA_SIM_FAULT_STOPS_DEVICE=1
// worker2's 31st launch faults whatever the interleaving, and the device stops: every thread still launching
// then has work in flight, as measured on the H200. 64 launches, where the GPU case makes 40: on the sim the
// work launched before the fault has completed, and with 64 every thread still launches after worker2's
// 31st, for each of the seeds 0 to 999.
// streams: two non-blocking streams; each round launches `produce` on P, records an event on P, makes C wait
// for it, launches `consume` on C and queues a host function on C that counts the rounds consumed; then C is
// synchronized, then P. With CUDA_SIM_FAULT=produce:5 CUDA_SIM_FAULT_SURFACES=sync the consumer inherits the
// fault through the event and it surfaces at the consumer's synchronize; the host functions queued behind it
// never run. Adding CUDA_SIM_FAULT_STOPS_DEVICE=1 CUDA_SIM_KERNEL_LAG=consume=1 makes it the GPU case's: each
// consume is still running at the next launch, so consume#4, launched before produce#5, is killed by its
// fault and never completes (3 host functions run): breadcrumbs see consume#4 and produce#5 unfinished, the
// older one innocent. many: with CUDA_SIM_FAULT=lookup:1 CUDA_SIM_FAULT_SURFACES=sync the fault of the first
// launch surfaces at the final cudaMemcpy, after 500 more launches on the same stream.
#include <cuda_runtime_api.h>
#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "sim_kernels.h"

SIM_KERNEL(accumulate, "_Z10accumulatePfi");
SIM_KERNEL(produce, "_Z7producePfi");
SIM_KERNEL(consume, "_Z7consumePfPKfi");
SIM_KERNEL(lookup, "_Z6lookupPfPKii");
SIM_KERNEL(scale, "_Z5scalePfif");

namespace {

const dim3 kGrid(256), kBlock(128);

// Worker w's grid in `threads`: (w + 1) * 4096 blocks of 256, as tests/gpu/threads_ptds.cu, whose batches
// differ in size: each worker's launches have a grid of their own (worker2's: (12288,1,1)), which tests can
// check, since the shim numbers threads in the order of their first CUDA call, not by worker.
dim3 worker_grid(int worker) {
  return dim3((worker + 1) * 4096);
}
const dim3 kWorkerBlock(256);

// Prints a failed call as the other test programs do; returns the result.
int report(const char* what, cudaError_t result) {
  if (result != cudaSuccess) std::printf("%s returned %d\n", what, static_cast<int>(result));
  return static_cast<int>(result);
}

int number(int argc, char** argv, int at, int fallback) {
  return argc > at ? std::atoi(argv[at]) : fallback;
}

// The interleaving's seed (see the top of the file). A seed file that cannot be rewritten is said on stderr:
// the next run would interleave as this one.
unsigned long seed_of_this_run() {
  unsigned long seed = 1;
  if (const char* file = std::getenv("CONCURRENT_SEED_FILE")) {
    seed = 0;
    std::ifstream in(file);
    if (!(in >> seed)) seed = 0;
    in.close();
    std::ofstream out(file, std::ios::trunc);
    if (!(out << seed + 1 << '\n'))
      std::fprintf(stderr, "concurrent_app: cannot write the next seed to %s\n", file);
  } else if (const char* env = std::getenv("CONCURRENT_SEED")) {
    seed = std::strtoul(env, nullptr, 10);
  }
  std::fprintf(stderr, "concurrent_app: seed %lu\n", seed);
  return seed;
}

// --- threads -----------------------------------------------------------------------------------------------

// The turns of the threads: whose launch is next, then (once every launch is made) whose synchronize.
struct Turns {
  std::mutex mu;
  std::condition_variable changed;
  std::mt19937 rng;
  std::vector<int> left;  // launches each thread has still to make (0 also once one of its calls failed)
  int next = -1;          // the thread whose launch is next; -1 once no thread has launches left
  int next_sync = 0;      // the thread whose synchronize is next
  bool trace = false;
  std::atomic<int> failures{0};

  // Draws the next thread among those with launches left. rng() % n, not a std distribution, whose results
  // the standard leaves to the library: one seed gives one order everywhere.
  void pick_next() {
    std::vector<int> candidates;
    for (size_t t = 0; t < left.size(); ++t)
      if (left[t] > 0) candidates.push_back(static_cast<int>(t));
    next = candidates.empty() ? -1 : candidates[rng() % candidates.size()];
  }
};

// noinline, like each mode's function: the launch line stays in a frame of its own, named after the function.
__attribute__((noinline)) void worker(Turns& turns, int index, int launches) {
  const std::string name = "worker" + std::to_string(index);
  pthread_setname_np(pthread_self(), name.c_str());  // what CUDA_SIM_FAULT_THREAD matches
  std::unique_lock<std::mutex> lock(turns.mu);
  const dim3 grid = worker_grid(index);
  int made = 0;
  for (int n = 1; n <= launches; ++n) {
    turns.changed.wait(lock, [&] { return turns.next == index; });
    if (turns.trace) std::fprintf(stderr, "%s launch %d\n", name.c_str(), n);
    // The launch is made with the lock held: the global order is the one drawn, whatever the scheduler does.
    cudaError_t result = sim::launch_ptsz(accumulate, grid, kWorkerBlock);  // FAULT-LINE accumulate
    if (result == cudaSuccess) {
      ++made;
      --turns.left[index];
    } else {
      std::printf("%s: accumulate launch %d returned %d\n", name.c_str(), n, static_cast<int>(result));
      turns.failures++;
      turns.left[index] = 0;  // a program that checks its calls stops there
    }
    turns.pick_next();
    turns.changed.notify_all();
    if (result != cudaSuccess) break;
  }
  turns.changed.wait(lock, [&] { return turns.next == -1 && turns.next_sync == index; });
  cudaError_t sync = cudaStreamSynchronize(cudaStreamPerThread);
  if (sync != cudaSuccess) turns.failures++;
  std::printf("%s: %d launches, cudaStreamSynchronize returned %d\n", name.c_str(), made,
              static_cast<int>(sync));
  ++turns.next_sync;
  turns.changed.notify_all();
}

__attribute__((noinline)) int threads_mode(int threads, int launches) {
  if (threads < 1 || launches < 1) {
    std::fprintf(stderr, "usage: concurrent_app threads N M (N, M >= 1)\n");
    return 2;
  }
  Turns turns;
  turns.rng.seed(static_cast<std::mt19937::result_type>(seed_of_this_run()));
  const char* trace = std::getenv("CONCURRENT_TRACE");
  turns.trace = trace && std::strcmp(trace, "1") == 0;
  turns.left.assign(threads, launches);
  turns.pick_next();
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) workers.emplace_back(worker, std::ref(turns), t, launches);
  for (std::thread& w : workers) w.join();
  const int failures = turns.failures.load();
  std::printf("%d threads, %d launches each, %d calls failed\n", threads, launches, failures);
  std::printf("done\n");
  return failures == 0 ? 0 : 1;
}

// --- streams -----------------------------------------------------------------------------------------------

void count_callback(void* counter) {
  static_cast<std::atomic<int>*>(counter)->fetch_add(1);
}

// One host thread, two non-blocking streams: the consumer waits for each round's producer launch through an
// event, so a fault of the producer's reaches the consumer's stream and surfaces at its synchronize.
__attribute__((noinline)) int streams_mode(int rounds) {
  int failed = 0;
  cudaStream_t producer = nullptr, consumer = nullptr;
  failed |= report("cudaStreamCreateWithFlags", cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking));
  failed |= report("cudaStreamCreateWithFlags", cudaStreamCreateWithFlags(&consumer, cudaStreamNonBlocking));
  cudaEvent_t ready = nullptr;
  failed |= report("cudaEventCreateWithFlags", cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
  std::atomic<int> callbacks{0};
  int produced = 0, consumed = 0;
  for (int round = 1; round <= rounds && !failed; ++round) {
    cudaError_t result = sim::launch(produce, kGrid, kBlock, producer);  // FAULT-LINE produce
    if ((failed |= report("produce launch", result))) break;
    ++produced;
    if ((failed |= report("cudaEventRecord", cudaEventRecord(ready, producer)))) break;
    if ((failed |= report("cudaStreamWaitEvent", cudaStreamWaitEvent(consumer, ready, 0)))) break;
    result = sim::launch(consume, kGrid, kBlock, consumer);  // FAULT-LINE consume
    if ((failed |= report("consume launch", result))) break;
    ++consumed;
    failed |= report("cudaLaunchHostFunc", cudaLaunchHostFunc(consumer, count_callback, &callbacks));
  }
  // The consumer first: the fault of a producer launch is first seen there.
  failed |= report("cudaStreamSynchronize(consumer)", cudaStreamSynchronize(consumer));
  failed |= report("cudaStreamSynchronize(producer)", cudaStreamSynchronize(producer));
  std::printf("%d produce launches, %d consume launches, %d host functions ran\n", produced, consumed,
              callbacks.load());
  std::printf("done\n");
  return failed ? 1 : 0;
}

// --- many --------------------------------------------------------------------------------------------------

// A fault in the first launch that the program first sees at its copy back, `launches` launches later.
__attribute__((noinline)) int many_mode(int launches) {
  int failed = 0;
  const size_t count = 1024;
  std::vector<float> host(count, 1.0f);
  float* data = nullptr;
  failed |= report("cudaMalloc", cudaMalloc(reinterpret_cast<void**>(&data), count * sizeof(float)));
  if (!failed)
    failed |=
        report("cudaMemcpy", cudaMemcpy(data, host.data(), count * sizeof(float), cudaMemcpyHostToDevice));
  int made = 0;
  if (!failed) {
    cudaError_t result = sim::launch(lookup, kGrid, kBlock, nullptr);  // FAULT-LINE lookup
    failed |= report("lookup launch", result);
    made += result == cudaSuccess;
  }
  for (int i = 0; i < launches && !failed; ++i) {
    cudaError_t result = sim::launch(scale, kGrid, kBlock, nullptr);  // FAULT-LINE scale
    failed |= report("scale launch", result);
    made += result == cudaSuccess;
  }
  cudaError_t copy = cudaMemcpy(host.data(), data, count * sizeof(float), cudaMemcpyDeviceToHost);
  failed |= report("cudaMemcpy", copy);
  double sum = 0;
  for (float v : host) sum += v;
  std::printf("%d launches, result %s (sum %g)\n", made, copy == cudaSuccess ? "copied" : "not copied", sum);
  std::printf("done\n");
  return failed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "threads") return threads_mode(number(argc, argv, 2, 4), number(argc, argv, 3, 64));
  if (mode == "streams") return streams_mode(number(argc, argv, 2, 8));
  if (mode == "many") return many_mode(number(argc, argv, 2, 500));
  std::fprintf(stderr, "usage: concurrent_app threads [N] [M] | streams [K] | many [L]\n");
  return 2;
}
// SPDX-License-Identifier: MIT
