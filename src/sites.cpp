// Symbolized stacks and the call site (see sites.h).
#include "sites.h"

#include <fmt/format.h>

#include <dlfcn.h>
#include <link.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

namespace blockrun {

namespace {

std::string_view file_name(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// `cudaLaunchKernel`, `cuLaunchKernel`, `cublasSgemm_v2`, `__cudaLaunchKernel`: an API entry point's
// name (a prefix followed by an upper-case letter), with or without a parameter list or template args.
bool is_cuda_api_name(std::string_view function) {
  // The static runtime's internal functions are local symbols named libcudart_static_<hash> (seen in
  // nvcc 13.0 programs), or cudart::* and __cudart* in older ones.
  for (std::string_view prefix : {"__cuda", "cudart::", "__cudart", "__device_stub__", "libcudart_static_"}) {
    if (starts_with(function, prefix)) return true;
  }
  for (std::string_view prefix : {"cublasLt", "cublas", "cuda", "cu"}) {
    if (starts_with(function, prefix) && function.size() > prefix.size() &&
        std::isupper(static_cast<unsigned char>(function[prefix.size()])))
      return true;
  }
  return false;
}

// The part of a demangled name before its parameter list.
std::string_view without_parameters(std::string_view function) {
  size_t paren = function.find('(');
  return paren == std::string_view::npos ? function : function.substr(0, paren);
}

}  // namespace

bool is_cuda_module(std::string_view module) {
  std::string_view file = file_name(module);
  for (std::string_view prefix :
       {"libcuda.so", "libcudart.so", "libcublas.so", "libcublasLt.so", "libcudnn", "libcufft", "libcurand",
        "libcusparse", "libcusolver", "libnvrtc", "libnvJitLink", "libnccl", "libnvidia-", "libcupti"}) {
    if (starts_with(file, prefix)) return true;
  }
  return false;
}

bool is_cuda_frame(const Frame& frame, const KernelName* kernel) {
  if (is_cuda_module(frame.module)) return true;
  if (ends_with(frame.file, ".stub.c")) return true;  // nvcc's <name>.cudafe1.stub.c
  // The runtime's launch templates (cuda_runtime.h, crt/host_runtime.h) inlined into the program.
  if (frame.file.find("/crt/") != std::string::npos || file_name(frame.file) == "cuda_runtime.h" ||
      file_name(frame.file) == "cuda_runtime_api.h")
    return true;
  std::string_view function = frame.function;
  if (function.empty()) return false;
  if (is_cuda_api_name(function)) return true;
  // The host stub nvcc generates for a kernel has the kernel's own name and parameters.
  if (kernel && !kernel->demangled.empty() &&
      (function == kernel->demangled || without_parameters(function) == kernel->base))
    return true;
  return false;
}

namespace {

// Whether `address` lies in the object file `module` (a real path): its loaded segments are found once, by
// the loader's list of objects. (Not dladdr per address: it scans the object's whole symbol table for the
// nearest symbol, hundreds of microseconds in libtorch_cuda.so, on every logged launch.)
bool in_module(uintptr_t address, const std::string& module) {
  if (module.empty()) return false;
  using Ranges = std::vector<std::pair<uintptr_t, uintptr_t>>;
  static std::mutex mutex;
  static std::map<std::string, Ranges> segments;  // one entry per module asked about (the shim's)
  std::lock_guard<std::mutex> guard(mutex);
  auto known = segments.find(module);
  if (known == segments.end()) {
    struct Search {
      const std::string* module;
      Ranges ranges;
    } search{&module, {}};
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* data) {
          auto* search = static_cast<Search*>(data);
          if (!info->dlpi_name || !info->dlpi_name[0]) return 0;
          char resolved[PATH_MAX];
          if (!realpath(info->dlpi_name, resolved) || *search->module != resolved) return 0;
          for (int i = 0; i < info->dlpi_phnum; ++i) {
            const ElfW(Phdr)& header = info->dlpi_phdr[i];
            if (header.p_type != PT_LOAD) continue;
            uintptr_t start = info->dlpi_addr + header.p_vaddr;
            search->ranges.emplace_back(start, start + header.p_memsz);
          }
          return 1;
        },
        &search);
    known = segments.emplace(module, std::move(search.ranges)).first;
  }
  uintptr_t lookup = address - 1;  // a return address may be one past its object's end
  for (const auto& [start, end] : known->second) {
    if (lookup >= start && lookup < end) return true;
  }
  return false;
}

}  // namespace

Site resolve_site(Symbolizer& symbolizer, const NativeStack& stack, const std::string& shim_module,
                  const KernelName* kernel, bool whole_stack) {
  Site site;
  // The shim's frames are its wrappers, innermost and around the CUDA runtime's (runtime -> driver): they
  // are not the program's and would only confuse.
  // Each return address expands to its inline chain: a launch stub inlined into the user's function has the
  // stub's line itself, and the user's line as the frame it was inlined into.
  // The shim's frames are recognized by the object holding them before anything is symbolized: reading the
  // shim's own debug information would cost libdw tens of megabytes for frames that are dropped anyway.
  // Without `whole_stack`, symbolizing stops at the call site: a logged launch needs only that line.
  for (uint32_t i = 0; i < stack.depth && (whole_stack || site.call_site < 0); ++i) {
    if (in_module(stack.frames[i], shim_module)) continue;
    for (Frame& frame : symbolizer.symbolize_inlined(stack.frames[i])) {
      if (!shim_module.empty() && frame.module == shim_module) break;
      if (site.call_site < 0 && !is_cuda_frame(frame, kernel))
        site.call_site = static_cast<int>(site.frames.size());
      site.frames.push_back(std::move(frame));
    }
  }
  return site;
}

namespace {

bool is_library_python_file(std::string_view file) {
  if (file.find("/site-packages/") != std::string_view::npos ||
      file.find("/dist-packages/") != std::string_view::npos)
    return true;
  if (starts_with(file, "<frozen ")) return true;
  // The standard library: .../lib/python3.12/threading.py (and lib64).
  for (std::string_view lib : {"/lib/python", "/lib64/python"}) {
    size_t at = file.find(lib);
    if (at == std::string_view::npos || at + lib.size() >= file.size() ||
        !std::isdigit(static_cast<unsigned char>(file[at + lib.size()])))
      continue;
    size_t slash = file.find('/', at + lib.size());
    if (slash != std::string_view::npos && file.find('/', slash + 1) == std::string_view::npos) return true;
  }
  return false;
}

}  // namespace

int python_call_site(const PythonStack& python) {
  if (python.status != PythonStatus::Captured || python.count == 0) return -1;
  for (int i = 0; i < python.count; ++i) {
    if (!is_library_python_file(python.frames[i].file)) return i;
  }
  return 0;
}

std::string short_location(const Frame& frame) {
  if (!frame.file.empty() && frame.line > 0) return fmt::format("{}:{}", frame.file, frame.line);
  if (!frame.function.empty())
    return fmt::format("{} ({}+{:#x})", frame.function, file_name(frame.module), frame.module_offset);
  if (!frame.module.empty()) return fmt::format("{}+{:#x}", frame.module, frame.module_offset);
  return fmt::format("{:#x}", frame.address);
}

}  // namespace blockrun
