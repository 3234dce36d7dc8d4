// A program that reaches the CUDA driver the way CuPy and Triton do: it links no CUDA library,
// dlopen()s libcuda.so.1 and finds every entry point with dlsym on that handle, loads a module,
// and launches its kernels with cuLaunchKernel (CuPy) or cuLaunchKernelEx (Triton) on a created
// stream. Built with g++ against the real CUDA headers (types only); runs on the simulated stack
// (LD_LIBRARY_PATH=${CUDA_BLOCKRUN_SIM_LIBDIR}), whose cuModuleLoadData accepts the "SIMIMG1" image.
//
//   driver_app [ex | proc]   (nothing)  cuLaunchKernel found with dlsym (CuPy)
//                            ex         cuLaunchKernelEx with a CUlaunchConfig, found with dlsym (Triton)
//                            proc       cuLaunchKernel found through cuGetProcAddress_v2, itself found with
//                                       dlsym (how the CUDA math libraries find the driver)
//                            linked     (driver_app_linked only) cuLaunchKernel called by name, the program
//                                       being linked with libcuda
//                            graph      a graph built node by node (cuGraphAddKernelNode: add_array,
//                                       oob_kernel, add_array), replayed 3 times, each waited for
//
// Kernels: oob_kernel (extern "C") and _Z9add_arrayPfS_i (add_array(float*, float*, int)), launched
// alternately, 5 times each (add_array first: launch #2k-1 is add_array's k-th, #2k oob_kernel's k-th).
// Faults are injected by the test through CUDA_SIM_FAULT (e.g. oob_kernel:3, launch #6).
// Prints every non-zero CUDA result as `<what> returned <code>`, then `done`.
#include <cuda.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "dlsym_driver.h"

namespace {

int report(const char* what, int result) {
  if (result != 0) std::printf("%s returned %d\n", what, result);
  return result;
}

// The driver functions every scenario calls, found with dlsym (dlsym_driver.h).
#define DRIVER_APP_FUNCTIONS(X)              \
  DLSYM_DRIVER_SETUP_FUNCTIONS(X)            \
  X(launch_kernel, cuLaunchKernel)           \
  X(launch_kernel_ex, cuLaunchKernelEx)      \
  X(stream_create, cuStreamCreate)           \
  X(stream_synchronize, cuStreamSynchronize) \
  X(ctx_synchronize, cuCtxSynchronize)       \
  X(mem_alloc, cuMemAlloc_v2)                \
  X(memcpy_dtoh, cuMemcpyDtoH_v2)
DLSYM_DRIVER_TABLE(Driver, DRIVER_APP_FUNCTIONS)

// ... and those of the `graph` scenario, found when it starts.
#define DRIVER_APP_GRAPH_FUNCTIONS(X)         \
  X(create, cuGraphCreate)                    \
  X(add_node, cuGraphAddKernelNode_v2)        \
  X(instantiate, cuGraphInstantiateWithFlags) \
  X(launch, cuGraphLaunch)                    \
  X(synchronize, cuStreamSynchronize)
DLSYM_DRIVER_TABLE(GraphDriver, DRIVER_APP_GRAPH_FUNCTIONS)

// A graph built node by node, replayed three times.
int graph_nodes(void* libcuda, CUstream stream, CUfunction add_array, CUfunction oob_kernel, CUdeviceptr a,
                CUdeviceptr b, int n, unsigned blocks, unsigned threads) {
  GraphDriver cu;
  if (!cu.find(libcuda)) return 1;
  CUgraph graph = nullptr;
  report("cuGraphCreate", cu.create(&graph, 0));
  long long offset = 0;
  void* add_args[] = {&a, &b, &n};
  void* oob_args[] = {&a, &offset};
  auto node_params = [&](CUfunction f, void** args) {
    CUDA_KERNEL_NODE_PARAMS params{};
    params.func = f;
    params.gridDimX = blocks;
    params.gridDimY = params.gridDimZ = 1;
    params.blockDimX = threads;
    params.blockDimY = params.blockDimZ = 1;
    params.kernelParams = args;
    return params;
  };
  CUgraphNode node = nullptr;
  CUDA_KERNEL_NODE_PARAMS first = node_params(add_array, add_args);
  report("cuGraphAddKernelNode", cu.add_node(&node, graph, nullptr, 0, &first));  // ADD_FIRST_NODE
  CUDA_KERNEL_NODE_PARAMS second = node_params(oob_kernel, oob_args);
  report("cuGraphAddKernelNode", cu.add_node(&node, graph, &node, 1, &second));  // ADD_SECOND_NODE
  report("cuGraphAddKernelNode", cu.add_node(&node, graph, &node, 1, &first));
  CUgraphExec exec = nullptr;
  report("cuGraphInstantiateWithFlags", cu.instantiate(&exec, graph, 0));
  for (int replay = 0; replay < 3; ++replay) {
    report("cuGraphLaunch", cu.launch(exec, stream));
    report("cuStreamSynchronize", cu.synchronize(stream));
  }
  std::printf("done\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IONBF, 0);  // output order must not depend on buffering
  const std::string how = argc > 1 ? argv[1] : "";
  if (how != "" && how != "ex" && how != "proc" && how != "linked" && how != "graph") {
    std::fprintf(stderr, "driver_app: unknown argument '%s' (expected: ex, proc, linked, graph or nothing)\n",
                 how.c_str());
    return 2;
  }
  void* libcuda = dlsym_driver::open_libcuda();
  if (!libcuda) return 1;
  Driver cu;
  if (!cu.find(libcuda)) return 1;
#ifdef DRIVER_APP_LINKED
  // The first door: the program is linked with libcuda and calls cuLaunchKernel by name.
  if (how == "linked") cu.launch_kernel = &::cuLaunchKernel;
#endif
  if (how == "proc") {
    decltype(&::cuGetProcAddress_v2) get_proc = nullptr;
    if (!dlsym_driver::find(libcuda, "cuGetProcAddress_v2", &get_proc)) return 1;
    void* fn = nullptr;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
    report("cuGetProcAddress_v2(cuLaunchKernel)",
           get_proc("cuLaunchKernel", &fn, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &status));
    if (!fn || status != CU_GET_PROC_ADDRESS_SUCCESS) {
      std::printf("cuGetProcAddress_v2(cuLaunchKernel): no function (status %d)\n", static_cast<int>(status));
      return 1;
    }
    cu.launch_kernel = reinterpret_cast<decltype(cu.launch_kernel)>(fn);
  }

  report("cuInit", cu.init(0));
  CUdevice device = 0;
  report("cuDeviceGet", cu.device_get(&device, 0));
  CUcontext context = nullptr;
  report("cuDevicePrimaryCtxRetain", cu.primary_ctx_retain(&context, device));
  report("cuCtxSetCurrent", cu.ctx_set_current(context));

  // The simulated driver accepts any image ("SIMIMG1" is its own format: no pointer parameters checked).
  static const char image[] = "SIMIMG1 driver_app";
  CUmodule module = nullptr;
  report("cuModuleLoadData", cu.module_load_data(&module, image));
  CUfunction oob_kernel = nullptr, add_array = nullptr;
  report("cuModuleGetFunction(oob_kernel)", cu.module_get_function(&oob_kernel, module, "oob_kernel"));
  report("cuModuleGetFunction(_Z9add_arrayPfS_i)",
         cu.module_get_function(&add_array, module, "_Z9add_arrayPfS_i"));
  CUstream stream = nullptr;
  report("cuStreamCreate", cu.stream_create(&stream, CU_STREAM_NON_BLOCKING));

  const int n = 1024;
  CUdeviceptr a = 0, b = 0;
  report("cuMemAlloc_v2", cu.mem_alloc(&a, n * sizeof(float)));
  report("cuMemAlloc_v2", cu.mem_alloc(&b, n * sizeof(float)));

  const unsigned threads = 256, blocks = n / threads;
  if (how == "graph") return graph_nodes(libcuda, stream, add_array, oob_kernel, a, b, n, blocks, threads);
  int launch_number = 0;
  for (int round = 0; round < 5; ++round) {
    for (int which = 0; which < 2; ++which) {
      ++launch_number;
      CUfunction f = which == 0 ? add_array : oob_kernel;
      // add_array(float* a, float* b, int n); oob_kernel(float* p, long long offset)
      long long offset = 0;
      int count = n;
      void* add_args[] = {&a, &b, &count};
      void* oob_args[] = {&a, &offset};
      void** args = which == 0 ? add_args : oob_args;
      CUresult result;
      if (how == "ex") {
        CUlaunchConfig config{};
        config.gridDimX = blocks;
        config.gridDimY = 1;
        config.gridDimZ = 1;
        config.blockDimX = threads;
        config.blockDimY = 1;
        config.blockDimZ = 1;
        config.sharedMemBytes = 0;
        config.hStream = stream;
        config.attrs = nullptr;
        config.numAttrs = 0;
        result = cu.launch_kernel_ex(&config, f, args, nullptr);
      } else {
        result = cu.launch_kernel(f, blocks, 1, 1, threads, 1, 1, 0, stream, args, nullptr);
      }
      if (result != CUDA_SUCCESS)
        std::printf("launch %d (%s) returned %d\n", launch_number, which == 0 ? "add_array" : "oob_kernel",
                    result);
    }
  }
  report("cuStreamSynchronize", cu.stream_synchronize(stream));
  report("cuCtxSynchronize", cu.ctx_synchronize());
  std::vector<float> host(n);
  int copy = report("cuMemcpyDtoH_v2", cu.memcpy_dtoh(host.data(), a, n * sizeof(float)));
  std::printf("done\n");
  return copy == 0 ? 0 : 1;
}
// SPDX-License-Identifier: MIT
