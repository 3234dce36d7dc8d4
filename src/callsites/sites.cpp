// Symbolized stacks and the call site (see sites.h).
#include "callsites/sites.h"

#include <fmt/format.h>

#include <dlfcn.h>
#include <link.h>

#include <cctype>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "callsites/loaded_objects.h"

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

namespace {

// Whether `path` has the directories `directories` ("include/thrust/") at its start or after a '/'.
bool has_directories(std::string_view path, std::string_view directories) {
  for (size_t at = path.find(directories); at != std::string_view::npos;
       at = path.find(directories, at + 1)) {
    if (at == 0 || path[at - 1] == '/') return true;
  }
  return false;
}

// Under the CUDA Toolkit's own directory: /usr/local/cuda/, /usr/local/cuda-13.0/ (include/,
// targets/x86_64-linux/include/, and the same reached through bin/../ as nvcc's include paths are).
bool in_toolkit_include(std::string_view path) {
  constexpr std::string_view kLocal = "/usr/local/cuda";
  if (!starts_with(path, kLocal)) return false;
  size_t slash = path.find('/', kLocal.size());
  return slash != std::string_view::npos && path.find("/include/", slash) != std::string_view::npos;
}

// .../targets/<arch>/include/...: the toolkit's layout, also where it is installed elsewhere (conda, the HPC
// SDK).
bool in_targets_include(std::string_view path) {
  for (size_t at = path.find("/targets/"); at != std::string_view::npos;
       at = path.find("/targets/", at + 1)) {
    size_t arch = at + std::string_view("/targets/").size();
    size_t slash = path.find('/', arch);
    if (slash != std::string_view::npos && slash > arch && starts_with(path.substr(slash), "/include/"))
      return true;
  }
  return false;
}

}  // namespace

SourceKind classify_source_file(std::string_view file) {
  if (file.empty()) return SourceKind::Program;
  // nvcc's generated host code: <name>.cudafe1.stub.c (launch stubs) and <name>.cudafe1.cpp (its lines not
  // mapped back to the .cu file by #line).
  if (ends_with(file, ".stub.c") || ends_with(file, ".cudafe1.cpp")) return SourceKind::CudaLaunch;
  // The runtime's launch templates (cuda_runtime.h, crt/host_runtime.h) inlined into the program.
  if (file.find("/crt/") != std::string_view::npos || file_name(file) == "cuda_runtime.h" ||
      file_name(file) == "cuda_runtime_api.h")
    return SourceKind::CudaLaunch;
  // The rest of the toolkit's headers: thrust, CUB, libcu++ (cuda/std), CCCL, wherever they are installed.
  if (in_toolkit_include(file) || in_targets_include(file)) return SourceKind::CudaLibrary;
  for (std::string_view library :
       {"include/thrust/", "include/cub/", "include/cuda/", "include/cccl/", "include/nv/"}) {
    if (has_directories(file, library)) return SourceKind::CudaLibrary;
  }
  return SourceKind::Program;
}

namespace {

// The frame's SourceKind: the symbolizer's, computed once per frame it caches; a frame built otherwise is
// classified here.
SourceKind source_of(const Frame& frame) {
  return frame.source != SourceKind::Unclassified ? frame.source : classify_source_file(frame.file);
}

}  // namespace

bool is_toolkit_frame(const Frame& frame) {
  return source_of(frame) == SourceKind::CudaLibrary;
}

bool is_cuda_frame(const Frame& frame, const KernelName* kernel) {
  if (is_cuda_module(frame.module)) return true;
  if (source_of(frame) == SourceKind::CudaLaunch) return true;
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
  // Never destroyed: a launch can come from an atexit handler registered before the first logged launch,
  // or from another thread while exit() runs, after static destructors (issue 17, F1).
  static std::mutex& mutex = *new std::mutex;
  static auto& segments =
      *new std::map<std::string, Ranges>;  // one entry per module asked about (the shim's)
  std::lock_guard<std::mutex> guard(mutex);
  auto known = segments.find(module);
  if (known == segments.end()) {
    Ranges ranges;
    visit_loaded_objects([&](const LoadedObject& object) {
      char resolved[PATH_MAX];
      if (!realpath(object.path, resolved) || module != resolved) return false;
      for (int i = 0; i < object.info.dlpi_phnum; ++i) {
        const ElfW(Phdr)& header = object.info.dlpi_phdr[i];
        if (header.p_type != PT_LOAD) continue;
        uintptr_t start = object.info.dlpi_addr + header.p_vaddr;
        ranges.emplace_back(start, start + header.p_memsz);
      }
      return true;
    });
    known = segments.emplace(module, std::move(ranges)).first;
  }
  uintptr_t lookup = address - 1;  // a return address may be one past its object's end
  for (const auto& [start, end] : known->second) {
    if (lookup >= start && lookup < end) return true;
  }
  return false;
}

// The call site, offered the frames innermost first (see choose_call_site).
class CallSiteChooser {
 public:
  explicit CallSiteChooser(const KernelName* kernel) : kernel_(kernel) {}
  void offer(const Frame& frame, int index) {
    if (found() || is_cuda_frame(frame, kernel_)) return;
    if (!is_toolkit_frame(frame)) {
      program_ = index;
    } else if (toolkit_ < 0) {
      toolkit_ = index;
    }
  }
  bool found() const { return program_ >= 0; }
  int call_site() const { return program_ >= 0 ? program_ : toolkit_; }

 private:
  const KernelName* kernel_;
  int program_ = -1;  // the first frame of the program's own
  int toolkit_ = -1;  // the first frame of the toolkit's headers
};

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
  // Frames of the CUDA Toolkit's headers (thrust, CUB) are the program's code but not its line: the call site
  // is the program's frame that called into them, and only where there is none, the first of them.
  CallSiteChooser chooser(kernel);
  for (uint32_t i = 0; i < stack.depth && (whole_stack || !chooser.found()); ++i) {
    if (in_module(stack.frames[i], shim_module)) continue;
    for (Frame& frame : symbolizer.symbolize_inlined(stack.frames[i])) {
      if (!shim_module.empty() && frame.module == shim_module) break;
      chooser.offer(frame, static_cast<int>(site.frames.size()));
      site.frames.push_back(std::move(frame));
    }
  }
  site.call_site = chooser.call_site();
  return site;
}

int choose_call_site(const std::vector<Frame>& frames, const KernelName* kernel) {
  CallSiteChooser chooser(kernel);
  for (size_t i = 0; i < frames.size() && !chooser.found(); ++i)
    chooser.offer(frames[i], static_cast<int>(i));
  return chooser.call_site();
}

namespace {

// TORCHINDUCTOR_CACHE_DIR, without trailing slashes; size 0 for none. Plain data, set before main() (by
// read_torchinductor_cache_dir) and never destroyed: threads still launching at exit may read it.
struct CacheDirectory {
  char path[4096];
  size_t size;
};
CacheDirectory g_inductor_cache_dir;

[[gnu::constructor]] void read_torchinductor_cache_dir() {
  const char* value = std::getenv("TORCHINDUCTOR_CACHE_DIR");
  set_torchinductor_cache_dir(value ? value : "");
}

// Whether `file` is under the directory `directory` (no trailing slash).
bool is_under(std::string_view file, std::string_view directory) {
  return !directory.empty() && file.size() > directory.size() + 1 && starts_with(file, directory) &&
         file[directory.size()] == '/';
}

}  // namespace

void set_torchinductor_cache_dir(std::string_view directory) {
  while (directory.size() > 1 && directory.back() == '/') directory.remove_suffix(1);
  if (directory == "/" || directory.size() >= sizeof g_inductor_cache_dir.path) directory = {};
  if (!directory.empty()) std::memcpy(g_inductor_cache_dir.path, directory.data(), directory.size());
  g_inductor_cache_dir.size = directory.size();
}

PythonFileKind classify_python_file(std::string_view file) {
  if (file.empty()) return PythonFileKind::Program;
  if (file[0] == '<') {
    // A pseudo-file: code typed in is the program's; the bootstrap's frozen modules are the standard
    // library's; anything else was generated at run time (exec'd "<string>", torch.fx's "<eval_with_key>.N").
    if (file == "<stdin>" || file == "<console>" || starts_with(file, "<ipython-input-"))
      return PythonFileKind::Program;
    return starts_with(file, "<frozen ") ? PythonFileKind::Library : PythonFileKind::Generated;
  }
  if (is_under(file, std::string_view(g_inductor_cache_dir.path, g_inductor_cache_dir.size)))
    return PythonFileKind::Generated;
  // Installed packages first, the most common frames before the program's: a single search.
  for (size_t at = file.find("-packages/"); at != std::string_view::npos;
       at = file.find("-packages/", at + 1)) {
    if (at >= 5 && (file.compare(at - 5, 5, "/site") == 0 || file.compare(at - 5, 5, "/dist") == 0))
      return PythonFileKind::Library;
  }
  // Then one pass over the directories (each component followed by a '/', after a '/'): most start with
  // neither letter below, and are passed over on their first character.
  size_t stdlib_version_end = std::string_view::npos;  // the '/' after lib/python3.X, where seen
  size_t last_slash = file.find('/');
  for (size_t start = last_slash; start != std::string_view::npos;) {
    ++start;
    const size_t slash = file.find('/', start);
    if (slash == std::string_view::npos) break;  // the file name
    last_slash = slash;
    const std::string_view directory = file.substr(start, slash - start);
    const std::string_view rest = file.substr(slash + 1);
    switch (directory.empty() ? '\0' : directory[0]) {
      case 't':
        // Inductor's cache: /tmp/torchinductor_<user>/ab/cabc....py (its generated modules) by default.
        if (starts_with(directory, "torchinductor_")) return PythonFileKind::Generated;
        // torch.compile's and Triton's machinery outside site-packages (a checkout, an editable install).
        if (directory == "torch" && (starts_with(rest, "_inductor/") || starts_with(rest, "_dynamo/")))
          return PythonFileKind::Library;
        if (directory == "triton" && (starts_with(rest, "runtime/") || starts_with(rest, "backends/") ||
                                      starts_with(rest, "compiler/")))
          return PythonFileKind::Library;
        break;
      case 'l':
        // The standard library's own modules: .../lib/python3.12/threading.py (and lib64), not its packages:
        // decided at the end, where the file name must follow the version's directory.
        if ((directory == "lib" || directory == "lib64") && rest.size() > 6 && starts_with(rest, "python") &&
            std::isdigit(static_cast<unsigned char>(rest[6])) && stdlib_version_end == std::string_view::npos)
          stdlib_version_end = file.find('/', slash + 1);
        break;
      default:
        break;
    }
    start = slash;
  }
  if (stdlib_version_end != std::string_view::npos && stdlib_version_end == last_slash)
    return PythonFileKind::Library;
  return PythonFileKind::Program;
}

namespace {

// Dynamo's frame evaluation (torch/_dynamo/eval_frame.py, wherever torch is): the caller of a function that
// torch.compile runs in its place.
bool is_dynamo_file(std::string_view file) {
  return file.find("/torch/_dynamo/") != std::string_view::npos;
}

// The first frame of the program's own from `from` on, -1 for none; `*past_last` set where it looked for one
// after the last frame (the answer depends on there being no more).
int first_program_frame(const PythonStack& python, int from, bool* past_last) {
  for (int i = from; i < python.count; ++i) {
    if (classify_python_file(python.frames[i].file) == PythonFileKind::Program) return i;
  }
  *past_last = true;
  return -1;
}

// python_call_site's choice; `*looked`: the frames [0, looked) it looked at, `*past_last` as above.
int choose_python_frame(const PythonStack& python, int* looked, bool* past_last) {
  if (python.count == 0) {
    *past_last = true;
    return -1;
  }
  int found = first_program_frame(python, 0, past_last);
  if (found < 0) return 0;
  *looked = found + 1;
  // A compiled function's frame is the one Dynamo runs in the function's place, with the function's file and
  // name but its first line: the program's line is its call, the next frame of the program's own (after
  // Dynamo's wrapper). Kept where there is none.
  if (found + 1 >= python.count) {
    *past_last = true;
    return found;
  }
  *looked = found + 2;
  if (is_dynamo_file(python.frames[found + 1].file)) {
    int caller = first_program_frame(python, found + 2, past_last);
    if (caller >= 0) {
      *looked = caller + 1;
      return caller;
    }
  }
  return found;
}

}  // namespace

int python_call_site(const PythonStack& python, PythonChoiceExtent* extent) {
  if (python.status != PythonStatus::Captured) return -1;
  int looked = 0;
  bool past_last = false;
  int chosen = choose_python_frame(python, &looked, &past_last);
  if (extent) {
    // Frames of the walk: the kept ones, and those passed over in the gap before frames[skipped_at].
    if (past_last) {
      extent->frames = size_t{python.count} + python.skipped;
      extent->to_end = !python.truncated;
    } else {
      size_t last = static_cast<size_t>(looked - 1);
      if (python.skipped > 0 && last >= python.skipped_at) last += python.skipped;
      extent->frames = last + 1;
      extent->to_end = false;
    }
  }
  return chosen;
}

std::string short_location(const Frame& frame) {
  if (!frame.file.empty() && frame.line > 0) return fmt::format("{}:{}", frame.file, frame.line);
  if (!frame.function.empty())
    return fmt::format("{} ({}+{:#x})", frame.function, file_name(frame.module), frame.module_offset);
  if (!frame.module.empty()) return fmt::format("{}+{:#x}", frame.module, frame.module_offset);
  return fmt::format("{:#x}", frame.address);
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT
