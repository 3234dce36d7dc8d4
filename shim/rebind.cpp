// libcuda_blockrun_rebind.so: the native half of the Python door (python/cuda_blockrun, docs/python.md).
//
// Why it exists. LD_PRELOAD puts the shim first in every symbol lookup of the process. A shim loaded later,
// by `import cuda_blockrun` (dlopen with RTLD_GLOBAL), comes after the executable's own libraries, the C
// library among them, and after everything loaded before it. So:
//   - every library's `dlsym` stays the C library's: the CUDA runtime, the math libraries, Triton and CuPy
//   find
//     the driver through it, and their launches never reach the shim's driver wrappers (the breadcrumbs, the
//     driver's error log, every launch of Triton and cuBLAS: issue 39);
//   - a library loaded before the shim (torch imported first) has its CUDA calls bound to the CUDA libraries.
// This library does, for one process at run time, what the loader does under LD_PRELOAD: it points every
// loaded object's relocated slots (GOT entries) of a name the shim exports at the shim's definition, as
// LLNL's GOTCHA does. The package calls it once the shim is loaded and again after each extension module or
// ctypes library it loads, before any of their code calls CUDA; an object is rebound once.
//
// What it leaves alone, as the loader would have: the shim itself (it finds the real functions on its own),
// this library, a reference an object resolves to its own definition (-Bsymbolic, protected), and an empty
// slot (an undefined weak reference). A function pointer already copied out of a slot (a CUDA runtime that
// initialized before the shim loaded) is out of reach: the package refuses to load that late
// (docs/python.md).
//
// Loaded RTLD_LOCAL by the package: its one export never enters the process's global scope (the shim's rule,
// nothing exported there but the hooks, stays whole).
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace {

#if defined(__x86_64__)
constexpr uint32_t kJumpSlot = R_X86_64_JUMP_SLOT;
constexpr uint32_t kGlobalData = R_X86_64_GLOB_DAT;
constexpr uint32_t kAbsolute = R_X86_64_64;
#elif defined(__aarch64__)
constexpr uint32_t kJumpSlot = R_AARCH64_JUMP_SLOT;
constexpr uint32_t kGlobalData = R_AARCH64_GLOB_DAT;
constexpr uint32_t kAbsolute = R_AARCH64_ABS64;
#else
#error "cuda_blockrun_rebind: only x86-64 and aarch64 (RELA relocations) are supported"
#endif

// The names the shim exports: the same table that makes its export list (shim/hooks.def).
constexpr const char* kHookNames[] = {
#define CUDA_BLOCKRUN_HOOK(layer, kind, stream, return_type, name, parameters, arguments) #name,
#define CUDA_BLOCKRUN_LOADER(name) #name,
#define CUDA_BLOCKRUN_PROCESS_END(name) #name,
#include "hooks.def"
};

// A loaded object as dl_iterate_phdr tells it, copied out so that it is examined outside the loader's lock
// (the examination must not take the loader's other lock while holding that one).
struct Object {
  ElfW(Addr) base = 0;
  std::string name;
  const ElfW(Phdr) * headers = nullptr;
  ElfW(Half) header_count = 0;
};

struct Range {
  uintptr_t begin = 0, end = 0;
  bool contains(uintptr_t address) const { return address >= begin && address < end; }
};

// Where the object's loadable segments lie in memory.
Range extent(const Object& object) {
  Range range{UINTPTR_MAX, 0};
  for (ElfW(Half) i = 0; i < object.header_count; ++i) {
    const ElfW(Phdr)& header = object.headers[i];
    if (header.p_type != PT_LOAD) continue;
    range.begin = std::min<uintptr_t>(range.begin, object.base + header.p_vaddr);
    range.end = std::max<uintptr_t>(range.end, object.base + header.p_vaddr + header.p_memsz);
  }
  return range;
}

// The pages the loader made read-only after relocating (PT_GNU_RELRO, its end rounded down as glibc does).
Range read_only_after_relocation(const Object& object) {
  uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  for (ElfW(Half) i = 0; i < object.header_count; ++i) {
    const ElfW(Phdr)& header = object.headers[i];
    if (header.p_type != PT_GNU_RELRO) continue;
    uintptr_t begin = (object.base + header.p_vaddr) & ~(page - 1);
    uintptr_t end = (object.base + header.p_vaddr + header.p_memsz) & ~(page - 1);
    return Range{begin, end};
  }
  return Range{};
}

// The dynamic section's addresses: glibc has relocated them in place, except in the vDSO and where a value is
// still an offset (below the object's base).
uintptr_t dynamic_address(const Object& object, ElfW(Addr) value) {
  return value < object.base ? object.base + value : value;
}

bool write_slot(uintptr_t slot, void* target, const Range& read_only) {
  if (!read_only.contains(slot)) {
    *reinterpret_cast<void**>(slot) = target;
    return true;
  }
  uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  void* start = reinterpret_cast<void*>(slot & ~(page - 1));
  size_t length = (slot + sizeof(void*) > reinterpret_cast<uintptr_t>(start) + page) ? 2 * page : page;
  if (mprotect(start, length, PROT_READ | PROT_WRITE) != 0) return false;
  *reinterpret_cast<void**>(slot) = target;
  mprotect(start, length, PROT_READ);
  return true;
}

class Rebinder {
 public:
  // Returns how many slots now point at the shim, or -1 with `problem` set.
  int rebind(void* shim, std::string* problem) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!targets(shim, problem)) return -1;
    int rebound = 0;
    for (const Object& object : loaded_objects()) {
      Range range = extent(object);
      if (range.contains(shim_address_) || range.contains(reinterpret_cast<uintptr_t>(&kHookNames))) continue;
      if (!done_.insert({object.base, object.name}).second) continue;
      rebound += rebind_object(object);
    }
    return rebound;
  }

 private:
  bool targets(void* shim, std::string* problem) {
    if (!targets_.empty()) return true;
    for (const char* name : kHookNames) {
      void* address = dlsym(shim, name);
      if (!address) {
        *problem = std::string("the shim does not export ") + name + " (a shim of another version?)";
        targets_.clear();
        return false;
      }
      targets_.emplace(name, address);
      shim_address_ = reinterpret_cast<uintptr_t>(address);
    }
    return true;
  }

  static std::vector<Object> loaded_objects() {
    std::vector<Object> objects;
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* data) -> int {
          auto* list = static_cast<std::vector<Object>*>(data);
          list->push_back(Object{info->dlpi_addr, info->dlpi_name ? info->dlpi_name : "", info->dlpi_phdr,
                                 info->dlpi_phnum});
          return 0;
        },
        &objects);
    return objects;
  }

  int rebind_object(const Object& object) {
    const ElfW(Dyn)* dynamic = nullptr;
    for (ElfW(Half) i = 0; i < object.header_count; ++i) {
      if (object.headers[i].p_type == PT_DYNAMIC)
        dynamic = reinterpret_cast<const ElfW(Dyn)*>(object.base + object.headers[i].p_vaddr);
    }
    if (!dynamic) return 0;
    uintptr_t symbols = 0, strings = 0, plt = 0, rela = 0;
    size_t plt_size = 0, rela_size = 0;
    bool plt_is_rela = true;
    for (const ElfW(Dyn)* entry = dynamic; entry->d_tag != DT_NULL; ++entry) {
      switch (entry->d_tag) {
        case DT_SYMTAB:
          symbols = dynamic_address(object, entry->d_un.d_ptr);
          break;
        case DT_STRTAB:
          strings = dynamic_address(object, entry->d_un.d_ptr);
          break;
        case DT_JMPREL:
          plt = dynamic_address(object, entry->d_un.d_ptr);
          break;
        case DT_PLTRELSZ:
          plt_size = entry->d_un.d_val;
          break;
        case DT_RELA:
          rela = dynamic_address(object, entry->d_un.d_ptr);
          break;
        case DT_RELASZ:
          rela_size = entry->d_un.d_val;
          break;
        case DT_PLTREL:
          plt_is_rela = entry->d_un.d_val == DT_RELA;
          break;
        default:
          break;
      }
    }
    if (!symbols || !strings) return 0;
    Range read_only = read_only_after_relocation(object);
    int rebound = 0;
    auto visit = [&](uintptr_t table, size_t size) {
      const auto* relocations = reinterpret_cast<const ElfW(Rela)*>(table);
      for (size_t i = 0; i < size / sizeof(ElfW(Rela)); ++i) {
        const ElfW(Rela)& relocation = relocations[i];
        uint32_t type = ELF64_R_TYPE(relocation.r_info);
        uint32_t symbol = ELF64_R_SYM(relocation.r_info);
        if (symbol == 0 || (type != kJumpSlot && type != kGlobalData && type != kAbsolute)) continue;
        if (type == kAbsolute && relocation.r_addend != 0) continue;
        const auto& entry = reinterpret_cast<const ElfW(Sym)*>(symbols)[symbol];
        if (entry.st_shndx != SHN_UNDEF) continue;  // the object's own definition
        const char* name = reinterpret_cast<const char*>(strings + entry.st_name);
        if ((name[0] != 'c' || name[1] != 'u') && std::strncmp(name, "__cuda", 6) != 0 &&
            std::strcmp(name, "dlsym") != 0)
          continue;  // two compares for the many names that cannot be hooks
        auto target = targets_.find(name);
        if (target == targets_.end()) continue;
        uintptr_t slot = object.base + relocation.r_offset;
        void* current = *reinterpret_cast<void**>(slot);
        // An empty slot is an undefined weak reference; one inside the object is its lazy-binding stub, not
        // yet resolved (the symbol is not its own), which the loader would resolve to the shim under
        // LD_PRELOAD.
        if (!current || current == target->second) continue;
        if (write_slot(slot, target->second, read_only)) ++rebound;
      }
    };
    if (rela && rela_size) visit(rela, rela_size);
    if (plt && plt_size && plt_is_rela) visit(plt, plt_size);
    return rebound;
  }

  std::mutex mutex_;
  std::unordered_map<std::string_view, void*> targets_;
  uintptr_t shim_address_ = 0;
  std::set<std::pair<ElfW(Addr), std::string>> done_;
};

}  // namespace

// Points every loaded object's slots of the shim's exported names at the shim (`shim`: its dlopen handle);
// objects already done are skipped. Returns the number of slots rebound, or -1 with the reason in `problem`.
// Never throws (a C ABI).
extern "C" __attribute__((visibility("default"))) int cuda_blockrun_rebind(void* shim, char* problem,
                                                                           size_t problem_size) {
  static Rebinder* rebinder = new Rebinder;  // never destroyed: a later call from an exit handler stays valid
  std::string why;
  int result = -1;
  try {
    result = rebinder->rebind(shim, &why);
  } catch (...) {
    why = "out of memory";
  }
  if (result < 0 && problem && problem_size) std::snprintf(problem, problem_size, "%s", why.c_str());
  return result;
}
// SPDX-License-Identifier: MIT
