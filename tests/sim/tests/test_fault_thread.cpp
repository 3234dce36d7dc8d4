// Tests CUDA_SIM_FAULT_THREAD: the ordinal of CUDA_SIM_FAULT (set by ctest to "stencil:3", surfacing at sync)
// counts only the launches of threads with that name, so that the same thread's N-th launch faults however
// the threads interleave. Each scenario runs in a forked child that sets CUDA_SIM_FAULT_THREAD (read once, at
// the first launch) before its first CUDA call; each step of a scenario launches from a thread of its own,
// named as the step says, and reads the driver's statistics to see whether the fault has happened.
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "check.h"
#include "sim_kernels.h"

SIM_KERNEL(stencil, "_Z7stencilPfix");
SIM_KERNEL(other, "_Z5otherv");

namespace {

long faults_injected() {
  sim::write_stats();
  return simtest::stat_in_file("faults_injected");
}

// `launches` launches of stencil from a new thread named `name` (empty: the name it inherits), on its
// per-thread default stream; then the number of faults injected so far. In sync mode every launch succeeds,
// the fault's included.
long launch_from(const std::string& name, int launches) {
  std::thread t([&] {
    if (!name.empty()) pthread_setname_np(pthread_self(), name.c_str());
    for (int i = 0; i < launches; ++i) CHECK_EQ(sim::launch_ptsz(stencil, dim3(1), dim3(32)), cudaSuccess);
  });
  t.join();
  return faults_injected();
}

// Launches from other threads, the main thread's included, neither count nor fault; the named thread's 3rd
// launch does, whichever thread of that name makes it, and the fault is on that thread's stream.
void counts_only_the_named_thread_scenario() {
  for (int i = 0; i < 5; ++i) CHECK_EQ(sim::launch(stencil, dim3(1), dim3(32)), cudaSuccess);
  CHECK_EQ(faults_injected(), 0);
  CHECK_EQ(launch_from("worker1", 5), 0);
  CHECK_EQ(launch_from("worker2", 2), 0);
  CHECK_EQ(launch_from("worker1", 3), 0);
  std::thread last([] {  // another thread of the same name: its first launch is worker2's third
    pthread_setname_np(pthread_self(), "worker2");
    CHECK_EQ(sim::launch_ptsz(other, dim3(1), dim3(32)), cudaSuccess);  // another kernel: not counted
    CHECK_EQ(faults_injected(), 0);
    CHECK_EQ(sim::launch_ptsz(stencil, dim3(1), dim3(32)), cudaSuccess);  // faults
    CHECK_EQ(faults_injected(), 1);
    CHECK_EQ(sim::launch_ptsz(stencil, dim3(1), dim3(32)), cudaSuccess);  // the 4th: no second fault
    CHECK_EQ(faults_injected(), 1);
    CHECK_EQ(cudaStreamSynchronize(cudaStreamPerThread), cudaErrorIllegalAddress);
  });
  last.join();
}

// The same thread's launch faults in two interleavings; its global ordinal differs (stencil#3, stencil#7).
void interleaving_scenario(const std::vector<const char*>& order) {
  long before = 0;
  int named = 0;
  for (const char* name : order) {
    const long after = launch_from(name, 1);
    named += std::string(name) == "worker2";
    CHECK_EQ(after - before, named == 3 && std::string(name) == "worker2" ? 1 : 0);
    before = after;
  }
  CHECK_EQ(before, 1);
  CHECK_EQ(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
}
void interleaving_a_scenario() {
  interleaving_scenario({"worker2", "worker2", "worker2", "worker1", "worker1"});
}
void interleaving_b_scenario() {
  interleaving_scenario({"worker1", "worker1", "worker2", "worker1", "worker2", "worker1", "worker2"});
}

// The name is asked at each launch: launches made before the thread took the name do not count.
void renamed_thread_scenario() {
  std::thread t([] {
    pthread_setname_np(pthread_self(), "loader");
    for (int i = 0; i < 2; ++i) CHECK_EQ(sim::launch_ptsz(stencil, dim3(1), dim3(32)), cudaSuccess);
    pthread_setname_np(pthread_self(), "worker2");
    for (int i = 0; i < 2; ++i) CHECK_EQ(sim::launch_ptsz(stencil, dim3(1), dim3(32)), cudaSuccess);
    CHECK_EQ(faults_injected(), 0);
    CHECK_EQ(sim::launch_ptsz(stencil, dim3(1), dim3(32)), cudaSuccess);  // the thread's 5th, worker2's 3rd
    CHECK_EQ(faults_injected(), 1);
  });
  t.join();
}

// Unset or empty: every launch counts, as without the variable (the 3rd launch anywhere faults).
void every_thread_counts_scenario() {
  CHECK_EQ(launch_from("worker1", 2), 0);
  CHECK_EQ(launch_from("worker2", 1), 1);
}

// A name longer than a thread name can be (15 characters) matches no thread: nothing faults (and stderr says
// so).
void name_too_long_scenario() {
  CHECK_EQ(launch_from("worker2", 5), 0);
  CHECK_EQ(launch_from("", 5), 0);
  CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

int run_child(void (*scenario)(), const char* label, const char* fault_thread) {
  return simtest::run_in_child(scenario, label,
                               [&] { simtest::set_or_unset("CUDA_SIM_FAULT_THREAD", fault_thread); });
}

}  // namespace

int main() {
  int failed = 0;
  failed += run_child(counts_only_the_named_thread_scenario, "only the named thread counts", "worker2");
  failed += run_child(interleaving_a_scenario, "interleaving a", "worker2");
  failed += run_child(interleaving_b_scenario, "interleaving b", "worker2");
  failed += run_child(renamed_thread_scenario, "renamed thread", "worker2");
  failed += run_child(every_thread_counts_scenario, "unset", nullptr);
  failed += run_child(every_thread_counts_scenario, "empty", "");
  failed += run_child(name_too_long_scenario, "name too long", "worker2_of_the_pool");
  std::printf("%s\n", failed ? "FAILED" : "all scenarios passed");
  return failed ? 1 : 0;
}
// SPDX-License-Identifier: MIT
