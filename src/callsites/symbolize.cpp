// The symbolizer (symbolize.h): libdw (elfutils) opened with dlopen when it can be, dladdr otherwise.
#include "callsites/symbolize.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "cuda/names.h"
#include "callsites/sites.h"

namespace blockrun {
namespace {

// ---- The part of elfutils' libdwfl.h and libdw.h used here, declared by hand so that the build needs no
// libdw headers. The layouts and signatures are those of the headers; every function used has kept its
// symbol version since ELFUTILS_0.122 (dwfl_module_addrinfo: 0.158, dwfl_build_id_find_debuginfo: 0.130).
// The GElf types are the 64-bit ELF types on every host. Dwarf_Die and Dwarf_Attribute are filled in by
// libdw in memory of ours, so their layouts are libdw.h's, unchanged since 0.122 (libdw.h writes
// Dwarf_Die's last field `long int padding__`, here intptr_t: the same on every Linux ABI).
struct Dwfl;
struct Dwfl_Module;
struct Dwfl_Line;
struct Dwarf_Line;
struct Dwarf_Files;
struct Dwarf_CU;
struct Dwarf_Abbrev;
struct Elf;
using Dwarf_Addr = uint64_t;
using Dwarf_Word = uint64_t;
using GElf_Addr = Elf64_Addr;
using GElf_Off = Elf64_Off;
using GElf_Word = Elf64_Word;
using GElf_Sym = Elf64_Sym;
using GElf_Shdr = Elf64_Shdr;

struct Dwarf_Die {
  void* addr;
  Dwarf_CU* cu;
  Dwarf_Abbrev* abbrev;
  intptr_t padding;
};

struct Dwarf_Attribute {
  unsigned int code;
  unsigned int form;
  unsigned char* valp;
  Dwarf_CU* cu;
};

// The DWARF constants used (dwarf.h).
constexpr int kTagClassType = 0x02;
constexpr int kTagEntryPoint = 0x03;
constexpr int kTagStructureType = 0x13;
constexpr int kTagUnionType = 0x17;
constexpr int kTagInlinedSubroutine = 0x1d;
constexpr int kTagSubprogram = 0x2e;
constexpr int kTagNamespace = 0x39;
constexpr unsigned int kAtName = 0x03;
constexpr unsigned int kAtAbstractOrigin = 0x31;
constexpr unsigned int kAtSpecification = 0x47;
constexpr unsigned int kAtCallFile = 0x58;
constexpr unsigned int kAtCallLine = 0x59;
constexpr unsigned int kAtLinkageName = 0x6e;
constexpr unsigned int kAtMipsLinkageName = 0x2007;  // what GCC before 4.5 wrote

struct Dwfl_Callbacks {
  int (*find_elf)(Dwfl_Module* mod, void** userdata, const char* modname, Dwarf_Addr base, char** file_name,
                  Elf** elfp);
  int (*find_debuginfo)(Dwfl_Module* mod, void** userdata, const char* modname, Dwarf_Addr base,
                        const char* file_name, const char* debuglink_file, GElf_Word debuglink_crc,
                        char** debuginfo_file_name);
  int (*section_address)(Dwfl_Module* mod, void** userdata, const char* modname, Dwarf_Addr base,
                         const char* secname, GElf_Word shndx, const GElf_Shdr* shdr, Dwarf_Addr* addr);
  char** debuginfo_path;
};

using ModuleRemovedCallback = int (*)(Dwfl_Module*, void*, const char*, Dwarf_Addr, void*);

// The functions used: name, return type, parameters. Every one must be found, or libdw is not used.
#define BLOCKRUN_LIBDW_FUNCTIONS(X)                                                                      \
  X(dwfl_begin, Dwfl*, const Dwfl_Callbacks*)                                                            \
  X(dwfl_end, void, Dwfl*)                                                                               \
  X(dwfl_version, const char*, Dwfl*)                                                                    \
  X(dwfl_errmsg, const char*, int)                                                                       \
  X(dwfl_report_begin, void, Dwfl*)                                                                      \
  X(dwfl_linux_proc_report, int, Dwfl*, pid_t)                                                           \
  X(dwfl_report_end, int, Dwfl*, ModuleRemovedCallback, void*)                                           \
  X(dwfl_linux_proc_find_elf, int, Dwfl_Module*, void**, const char*, Dwarf_Addr, char**, Elf**)         \
  X(dwfl_build_id_find_debuginfo, int, Dwfl_Module*, void**, const char*, Dwarf_Addr, const char*,       \
    const char*, GElf_Word, char**)                                                                      \
  X(dwfl_offline_section_address, int, Dwfl_Module*, void**, const char*, Dwarf_Addr, const char*,       \
    GElf_Word, const GElf_Shdr*, Dwarf_Addr*)                                                            \
  X(dwfl_addrmodule, Dwfl_Module*, Dwfl*, Dwarf_Addr)                                                    \
  X(dwfl_module_info, const char*, Dwfl_Module*, void***, Dwarf_Addr*, Dwarf_Addr*, Dwarf_Addr*,         \
    Dwarf_Addr*, const char**, const char**)                                                             \
  X(dwfl_module_addrinfo, const char*, Dwfl_Module*, GElf_Addr, GElf_Off*, GElf_Sym*, GElf_Word*, Elf**, \
    Dwarf_Addr*)                                                                                         \
  X(dwfl_module_getsrc, Dwfl_Line*, Dwfl_Module*, Dwarf_Addr)                                            \
  X(dwfl_lineinfo, const char*, Dwfl_Line*, Dwarf_Addr*, int*, int*, Dwarf_Word*, Dwarf_Word*)           \
  X(dwfl_module_nextcu, Dwarf_Die*, Dwfl_Module*, Dwarf_Die*, Dwarf_Addr*)                               \
  X(dwarf_haspc, int, Dwarf_Die*, Dwarf_Addr)                                                            \
  X(dwarf_getsrc_die, Dwarf_Line*, Dwarf_Die*, Dwarf_Addr)                                               \
  X(dwarf_lineno, int, Dwarf_Line*, int*)                                                                \
  X(dwarf_linesrc, const char*, Dwarf_Line*, Dwarf_Word*, Dwarf_Word*)

// The functions that find inlined functions (symbolize_inlined). Without any of them, libdw is still used and
// each address gives one frame.
#define BLOCKRUN_LIBDW_INLINE_FUNCTIONS(X)                                              \
  X(dwfl_module_addrdie, Dwarf_Die*, Dwfl_Module*, Dwarf_Addr, Dwarf_Addr*)             \
  X(dwarf_getscopes, int, Dwarf_Die*, Dwarf_Addr, Dwarf_Die**)                          \
  X(dwarf_getscopes_die, int, Dwarf_Die*, Dwarf_Die**)                                  \
  X(dwarf_tag, int, Dwarf_Die*)                                                         \
  X(dwarf_attr, Dwarf_Attribute*, Dwarf_Die*, unsigned int, Dwarf_Attribute*)           \
  X(dwarf_attr_integrate, Dwarf_Attribute*, Dwarf_Die*, unsigned int, Dwarf_Attribute*) \
  X(dwarf_formudata, int, Dwarf_Attribute*, Dwarf_Word*)                                \
  X(dwarf_formstring, const char*, Dwarf_Attribute*)                                    \
  X(dwarf_formref_die, Dwarf_Die*, Dwarf_Attribute*, Dwarf_Die*)                        \
  X(dwarf_diecu, Dwarf_Die*, Dwarf_Die*, Dwarf_Die*, uint8_t*, uint8_t*)                \
  X(dwarf_getsrcfiles, int, Dwarf_Die*, Dwarf_Files**, size_t*)                         \
  X(dwarf_filesrc, const char*, Dwarf_Files*, size_t, Dwarf_Word*, Dwarf_Word*)

constexpr const char* kWithoutLibdw = "; function names from dynamic symbols only";

// Frees what libdw allocated with malloc (the arrays of dwarf_getscopes and dwarf_getscopes_die).
struct FreeMemory {
  void operator()(void* memory) const { std::free(memory); }
};

}  // namespace

struct Symbolizer::Libdw {
  void* handle = nullptr;
  Dwfl* session = nullptr;
  Dwfl_Callbacks callbacks{};  // libdwfl keeps a pointer to it: it lives as long as the session
#define BLOCKRUN_LIBDW_POINTER(name, result, ...) result (*name)(__VA_ARGS__) = nullptr;
  BLOCKRUN_LIBDW_FUNCTIONS(BLOCKRUN_LIBDW_POINTER)
  BLOCKRUN_LIBDW_INLINE_FUNCTIONS(BLOCKRUN_LIBDW_POINTER)
#undef BLOCKRUN_LIBDW_POINTER
  bool finds_inlined = false;  // every function of BLOCKRUN_LIBDW_INLINE_FUNCTIONS was found

  ~Libdw() {
    if (session) dwfl_end(session);
    if (handle) dlclose(handle);
  }

  // Reports the process's current modules; modules reported before with the same name and range keep what
  // was already read from them. Returns 0, or an errno code / -1 as dwfl_linux_proc_report does.
  int report() {
    dwfl_report_begin(session);
    int result = dwfl_linux_proc_report(session, getpid());
    dwfl_report_end(session, nullptr, nullptr);
    return result;
  }

  // The module whose range holds `address`, and its name and start; null when none does. dwfl_addrmodule
  // (0.188) answers an address in a gap between modules, or above the last one, with the nearest module
  // below it: only a module whose range holds the address counts.
  Dwfl_Module* module_holding(Dwarf_Addr address, const char** name, Dwarf_Addr* start) {
    Dwfl_Module* module = dwfl_addrmodule(session, address);
    if (!module) return nullptr;
    Dwarf_Addr end = 0;
    *name = dwfl_module_info(module, nullptr, start, &end, nullptr, nullptr, nullptr, nullptr);
    return *name && (*name)[0] && *start <= address && address < end ? module : nullptr;
  }

  // The compilation unit whose address ranges hold `address`, searched one unit after the other; null when
  // none does. libdw before 0.191 finds a unit by address through .debug_aranges only, and takes that
  // section as complete: for code built by clang, which writes none unless -gdwarf-aranges, it finds no unit.
  Dwarf_Die* unit_holding(Dwfl_Module* module, Dwarf_Addr address, Dwarf_Addr* bias) {
    for (Dwarf_Die* unit = dwfl_module_nextcu(module, nullptr, bias); unit;
         unit = dwfl_module_nextcu(module, unit, bias)) {
      if (dwarf_haspc(unit, address - *bias) == 1) return unit;
    }
    return nullptr;
  }

  // The name of the function that `die`, a subprogram or an inlined subroutine, is an instance of: its
  // linkage name demangled, else its name qualified with the namespaces and classes around it. "" when
  // DWARF names none.
  std::string function_name(Dwarf_Die* die) {
    Dwarf_Attribute attribute;
    const char* linkage = dwarf_formstring(dwarf_attr_integrate(die, kAtLinkageName, &attribute));
    if (!linkage) linkage = dwarf_formstring(dwarf_attr_integrate(die, kAtMipsLinkageName, &attribute));
    if (linkage && linkage[0]) return demangle(linkage);
    const char* name = dwarf_formstring(dwarf_attr_integrate(die, kAtName, &attribute));
    if (!name || !name[0]) return {};
    // The namespaces and classes hold the declaration, which the instance reaches through its abstract
    // origin, then the specification (a member function defined outside its class is defined at the top).
    Dwarf_Die declaration = *die;
    for (int hop = 0; hop < 8; ++hop) {  // bounded: broken DWARF can make a cycle
      Dwarf_Attribute* reference = dwarf_attr(&declaration, kAtAbstractOrigin, &attribute);
      if (!reference) reference = dwarf_attr(&declaration, kAtSpecification, &attribute);
      Dwarf_Die target;
      if (!reference || !dwarf_formref_die(reference, &target)) break;
      declaration = target;
    }
    Dwarf_Die* found = nullptr;
    const int count = dwarf_getscopes_die(&declaration, &found);
    std::unique_ptr<Dwarf_Die, FreeMemory> scopes(count > 0 ? found : nullptr);
    std::string qualified;
    for (int i = count - 1; i >= 1; --i) {  // [0] is the declaration itself, [count - 1] its unit
      const int tag = dwarf_tag(&scopes.get()[i]);
      if (tag != kTagNamespace && tag != kTagClassType && tag != kTagStructureType && tag != kTagUnionType) {
        continue;
      }
      const char* scope = dwarf_formstring(dwarf_attr(&scopes.get()[i], kAtName, &attribute));
      if (scope && scope[0]) {
        qualified.append(scope).append("::");
      } else if (tag == kTagNamespace) {
        qualified.append("(anonymous namespace)::");  // as the demangler writes it
      }
    }
    return qualified + name;
  }

  // Where the inlined subroutine `die` was inlined: file and line, or "" and 0.
  void call_site(Dwarf_Die* die, std::string& file, int& line) {
    Dwarf_Attribute attribute;
    Dwarf_Word file_index = 0;
    Dwarf_Word line_number = 0;
    if (dwarf_formudata(dwarf_attr(die, kAtCallFile, &attribute), &file_index) != 0 ||
        dwarf_formudata(dwarf_attr(die, kAtCallLine, &attribute), &line_number) != 0 || line_number == 0 ||
        line_number > INT_MAX) {
      return;
    }
    // The index is one of the line table of the unit holding the DIE, numbered as libdw reads that table:
    // DWARF 5 counts from 0; before it, from 1, and libdw puts a "???" entry at 0.
    Dwarf_Die unit;
    Dwarf_Files* files = nullptr;
    if (!dwarf_diecu(die, &unit, nullptr, nullptr) || dwarf_getsrcfiles(&unit, &files, nullptr) != 0) return;
    const char* name = dwarf_filesrc(files, file_index, nullptr, nullptr);
    if (!name || !name[0] || std::strcmp(name, "???") == 0) return;
    file = name;
    line = static_cast<int>(line_number);
  }
};

namespace {

using BuildIdFindDebuginfo = int (*)(Dwfl_Module*, void**, const char*, Dwarf_Addr, const char*, const char*,
                                     GElf_Word, char**);

// dwfl_build_id_find_debuginfo of the libdw that the calling thread's symbolize() is using: libdwfl calls
// find_debuginfo with no pointer of ours, and two Symbolizers may use two different libdw files at once.
thread_local BuildIdFindDebuginfo callback_build_id_finder = nullptr;

class CallbackScope {
 public:
  explicit CallbackScope(BuildIdFindDebuginfo finder) : saved_(callback_build_id_finder) {
    callback_build_id_finder = finder;
  }
  ~CallbackScope() { callback_build_id_finder = saved_; }
  CallbackScope(const CallbackScope&) = delete;
  CallbackScope& operator=(const CallbackScope&) = delete;

 private:
  BuildIdFindDebuginfo saved_;
};

// CRC-32 as .gnu_debuglink records it (zlib's: reflected polynomial 0xEDB88320).
uint32_t crc32(uint32_t crc, const unsigned char* data, size_t size) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> entries{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t value = i;
      for (int bit = 0; bit < 8; ++bit) value = (value & 1) ? 0xEDB88320u ^ (value >> 1) : value >> 1;
      entries[i] = value;
    }
    return entries;
  }();
  crc = ~crc;
  for (size_t i = 0; i < size; ++i) crc = table[(crc ^ data[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

bool file_crc_is(int fd, uint32_t expected) {
  unsigned char buffer[16384];
  uint32_t crc = 0;
  for (;;) {
    ssize_t count = read(fd, buffer, sizeof buffer);
    if (count < 0 && errno == EINTR) continue;
    if (count < 0) return false;
    if (count == 0) break;
    crc = crc32(crc, buffer, static_cast<size_t>(count));
  }
  return crc == expected && lseek(fd, 0, SEEK_SET) == 0;
}

// An open descriptor of `path` when it is a regular file, not the main file itself, whose CRC-32 is `crc`.
int open_debuglink_candidate(const std::string& path, const struct stat& main_file, uint32_t crc) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat file;
  if (fstat(fd, &file) == 0 && S_ISREG(file.st_mode) &&
      !(file.st_dev == main_file.st_dev && file.st_ino == main_file.st_ino) && file_crc_is(fd, crc)) {
    return fd;
  }
  close(fd);
  return -1;
}

// Dwfl_Callbacks.find_debuginfo, called for a module whose own file has no DWARF (libdwfl reads the module's
// own file first). It must never contact the network. elfutils' standard finder,
// dwfl_standard_find_debuginfo, ends its search by asking the debuginfod servers named in DEBUGINFOD_URLS,
// which Ubuntu sets in every login shell by default, and Debian where the administrator enabled it
// (libdebuginfod-common's profile script): inside the host program that would mean HTTP downloads, and
// waits of up to DEBUGINFOD_TIMEOUT (90 s) per module, behind the program's back. The host's environment is
// not ours to change, and libdwfl offers no switch for it, so this finder does the local part of the standard
// search only:
// 1. by build ID, .build-id/xx/yyyy.debug under /usr/lib/debug (where the -dbgsym/-debuginfo packages
//    put them), with dwfl_build_id_find_debuginfo, which only opens local files and also finds the dwz
//    alternate file;
// 2. by the .gnu_debuglink name, next to the file, in its .debug/, and under /usr/lib/debug/<its directory>,
//    accepted only when the file's CRC-32 is the one the link records.
int find_debuginfo_locally(Dwfl_Module* module, void** userdata, const char* module_name, Dwarf_Addr base,
                           const char* file_name, const char* debuglink, GElf_Word debuglink_crc,
                           char** debuginfo_file_name) noexcept {
  try {
    if (callback_build_id_finder) {
      int fd = callback_build_id_finder(module, userdata, module_name, base, file_name, debuglink,
                                        debuglink_crc, debuginfo_file_name);
      if (fd >= 0) return fd;
    }
    // libdwfl passes a zero CRC when it looks for the dwz alternate file, which only the build ID identifies.
    struct stat main_file;
    if (file_name && file_name[0] == '/' && debuglink && debuglink[0] && debuglink_crc != 0 &&
        stat(file_name, &main_file) == 0) {
      const std::string directory(file_name, std::strrchr(file_name, '/'));
      for (const std::string& candidate : {directory + "/" + debuglink, directory + "/.debug/" + debuglink,
                                           "/usr/lib/debug" + directory + "/" + debuglink}) {
        int fd = open_debuglink_candidate(candidate, main_file, debuglink_crc);
        if (fd < 0) continue;
        *debuginfo_file_name = strdup(candidate.c_str());  // libdwfl frees it
        return fd;
      }
    }
  } catch (...) {
    // Out of memory: no separate debug file, the module keeps its symbols.
  }
  errno = 0;  // "not found", as libdwfl's own finders say it
  return -1;
}

// The main program's path: dladdr gives argv[0] or "" for it.
std::string main_program_path() {
  char buffer[PATH_MAX];
  ssize_t length = readlink("/proc/self/exe", buffer, sizeof buffer);
  if (length > 0 && static_cast<size_t>(length) < sizeof buffer) return std::string(buffer, length);
  // No /proc: the name the program was started with, made absolute where it still resolves.
  if (auto name = reinterpret_cast<const char*>(getauxval(AT_EXECFN))) {
    if (char* real = realpath(name, nullptr)) {
      std::string path(real);
      std::free(real);
      return path;
    }
    if (name[0]) return name;
  }
  return "[main program]";
}

}  // namespace

Symbolizer::Symbolizer(std::string libdw) : libdw_request_(std::move(libdw)) {}

Symbolizer::~Symbolizer() = default;

Frame Symbolizer::symbolize(uintptr_t address, bool return_address) {
  Frame frame;
  frame.address = address;
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    symbolize_locked(address, return_address, frame);
  } catch (...) {
    // Out of memory or a failed lock: the frame keeps what was found, at least the address.
  }
  return frame;
}

std::vector<Frame> Symbolizer::symbolize_inlined(uintptr_t address, bool return_address) {
  std::vector<Frame> frames;
  Frame outermost;
  outermost.address = address;
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    std::unordered_map<uintptr_t, std::vector<Frame>>& cache = inlined_cache_[return_address ? 1 : 0];
    auto cached = cache.find(address);
    if (cached != cache.end()) return cached->second;
    symbolize_locked(address, return_address, outermost);
    frames = inlined_frames_locked(address, return_address, outermost);
    if (frames.empty()) frames.push_back(outermost);
    // Each caller's file:line is where the next inner function was inlined into it: classified anew.
    for (Frame& frame : frames) frame.source = classify_source_file(frame.file);
    if (cached_frames_ + frames.size() <= kCacheLimit) {
      cache.emplace(address, frames);
      cached_frames_ += frames.size();
    }
  } catch (...) {
    // Out of memory or a failed lock: the frames found, else the one frame found.
  }
  if (frames.empty()) {
    try {
      frames.push_back(std::move(outermost));
    } catch (...) {
      // No memory even for one frame.
    }
  }
  return frames;
}

bool Symbolizer::has_libdw() {
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    return libdw_ != nullptr;
  } catch (...) {
    return false;
  }
}

std::string Symbolizer::libdw_status() {
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    return libdw_status_;
  } catch (...) {
    return {};
  }
}

std::string Symbolizer::libdw_problem() {
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    return libdw_problem_;
  } catch (...) {
    return {};
  }
}

void Symbolizer::load_locked() {
  loaded_ = true;  // first: a libdw that fails to load is not tried again on every call
  main_program_ = main_program_path();
  if (libdw_request_ == "off") {
    libdw_status_ = fmt::format("libdw off (as configured){}", kWithoutLibdw);
    return;
  }
  const std::string path = libdw_request_.empty() ? "libdw.so.1" : libdw_request_;
  auto libdw = std::make_unique<Libdw>();
  // RTLD_LOCAL: libdw's symbols must not start resolving the host's own references.
  libdw->handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!libdw->handle) {
    const char* error = dlerror();
    libdw_problem_ = fmt::format("{} not found: {}", path, error ? error : "dlopen failed");
    libdw_status_ = libdw_problem_ + kWithoutLibdw;
    return;
  }
  std::string missing;
#define BLOCKRUN_LIBDW_RESOLVE(name, result, ...)                                     \
  libdw->name = reinterpret_cast<decltype(libdw->name)>(dlsym(libdw->handle, #name)); \
  if (!libdw->name) missing += (missing.empty() ? "" : ", ") + std::string(#name);
  BLOCKRUN_LIBDW_FUNCTIONS(BLOCKRUN_LIBDW_RESOLVE)
  std::string problem;
  if (!missing.empty()) {
    libdw_problem_ = fmt::format("{} is not a usable libdw (it lacks {})", path, missing);
    libdw_status_ = libdw_problem_ + kWithoutLibdw;
    return;  // ~Libdw closes it
  }
  BLOCKRUN_LIBDW_INLINE_FUNCTIONS(BLOCKRUN_LIBDW_RESOLVE)
  libdw->finds_inlined = missing.empty();
  if (!missing.empty()) problem = fmt::format("; no inlined functions (it lacks {})", missing);
#undef BLOCKRUN_LIBDW_RESOLVE

  libdw->callbacks.find_elf = libdw->dwfl_linux_proc_find_elf;  // opens the mapped file, or reads the vDSO
  libdw->callbacks.find_debuginfo = find_debuginfo_locally;
  libdw->callbacks.section_address = libdw->dwfl_offline_section_address;
  libdw->callbacks.debuginfo_path = nullptr;  // elfutils' default, ":.debug:/usr/lib/debug"
  libdw->session = libdw->dwfl_begin(&libdw->callbacks);
  if (!libdw->session) {
    libdw_problem_ = fmt::format("{}: dwfl_begin failed: {}", path, libdw->dwfl_errmsg(-1));
    libdw_status_ = libdw_problem_ + kWithoutLibdw;
    return;
  }
  if (int reported = libdw->report(); reported != 0) {
    problem +=
        fmt::format("; reading this process's modules failed ({}): dladdr answers where libdw finds none",
                    reported > 0 ? std::strerror(reported) : libdw->dwfl_errmsg(-1));
  }
  // The file that was loaded, which the search may have found anywhere.
  std::string loaded = path;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(libdw->dwfl_begin), &info) && info.dli_fname && info.dli_fname[0]) {
    loaded = info.dli_fname;
  }
  const char* version = libdw->dwfl_version(libdw->session);
  libdw_status_ =
      fmt::format("libdw {} (elfutils {}){}", loaded, version ? version : "of unknown version", problem);
  libdw_ = std::move(libdw);
}

namespace {

// A return address is the instruction after the call, which can be the next line or even the next function
// (a call to a noreturn function ends its caller); address-1 lies inside the call instruction.
uintptr_t lookup_address(uintptr_t address, bool return_address) {
  return return_address && address > 0 ? address - 1 : address;
}

}  // namespace

void Symbolizer::symbolize_locked(uintptr_t address, bool return_address, Frame& frame) {
  std::unordered_map<uintptr_t, Frame>& cache = cache_[return_address ? 1 : 0];
  auto cached = cache.find(address);
  if (cached != cache.end()) {
    frame = cached->second;
    return;
  }
  if (!loaded_) load_locked();
  compute_locked(address, return_address, frame);
  frame.source = classify_source_file(frame.file);  // once per address while the cache has room
  if (cached_frames_ < kCacheLimit) {
    cache.emplace(address, frame);
    ++cached_frames_;
  }
}

void Symbolizer::compute_locked(uintptr_t address, bool return_address, Frame& frame) {
  const uintptr_t lookup = lookup_address(address, return_address);
  if (libdw_ && symbolize_with_libdw_locked(address, lookup, frame)) return;
  symbolize_with_dladdr_locked(address, lookup, frame);
}

bool Symbolizer::symbolize_with_libdw_locked(uintptr_t address, uintptr_t lookup, Frame& frame) {
  Libdw& libdw = *libdw_;
  CallbackScope scope(libdw.dwfl_build_id_find_debuginfo);
  const char* name = nullptr;
  Dwarf_Addr start = 0;
  Dwfl_Module* module = libdw.module_holding(lookup, &name, &start);
  if (!module) {
    // A library dlopen'ed since the modules were last reported: report them again, once, and retry.
    libdw.report();
    module = libdw.module_holding(lookup, &name, &start);
  }
  if (!module) return false;
  frame.module = name;
  frame.module_offset = address - start;

  // .symtab when the file has one (names without -g too), else .dynsym.
  GElf_Off offset = 0;
  GElf_Sym symbol{};
  const char* function =
      libdw.dwfl_module_addrinfo(module, lookup, &offset, &symbol, nullptr, nullptr, nullptr);
  if (function && function[0]) frame.function = demangle(function);

  const char* file = nullptr;
  int number = 0;
  if (Dwfl_Line* line = libdw.dwfl_module_getsrc(module, lookup)) {
    file = libdw.dwfl_lineinfo(line, nullptr, &number, nullptr, nullptr, nullptr);
  } else {
    // dwfl_module_getsrc finds the compilation unit through .debug_aranges (see unit_holding).
    Dwarf_Addr bias = 0;
    if (Dwarf_Die* unit = libdw.unit_holding(module, lookup, &bias)) {
      Dwarf_Line* line = libdw.dwarf_getsrc_die(unit, lookup - bias);
      if (line && libdw.dwarf_lineno(line, &number) == 0) file = libdw.dwarf_linesrc(line, nullptr, nullptr);
    }
  }
  if (file && file[0] && number > 0) {
    frame.file = file;
    frame.line = number;
  }
  return true;
}

std::vector<Frame> Symbolizer::inlined_frames_locked(uintptr_t address, bool return_address,
                                                     const Frame& outermost) {
  if (!libdw_ || !libdw_->finds_inlined || outermost.module.empty()) return {};
  Libdw& libdw = *libdw_;
  CallbackScope scope(libdw.dwfl_build_id_find_debuginfo);
  const uintptr_t lookup = lookup_address(address, return_address);
  const char* name = nullptr;
  Dwarf_Addr start = 0;
  // None: dladdr named the module, after symbolize_locked reported the modules again.
  Dwfl_Module* module = libdw.module_holding(lookup, &name, &start);
  if (!module) return {};
  Dwarf_Addr bias = 0;
  // libdwfl's search of .debug_aranges (addrarange in libdwfl/cu.c; seen with 0.188) takes each entry to
  // reach the next one, so for code the section does not cover (a clang-built unit linked with GCC-built
  // ones) it answers with the unit before that code: a unit counts only when its ranges hold the address.
  Dwarf_Die* unit = libdw.dwfl_module_addrdie(module, lookup, &bias);
  if (!unit || libdw.dwarf_haspc(unit, lookup - bias) != 1) unit = libdw.unit_holding(module, lookup, &bias);
  if (!unit) return {};

  // dwarf_getscopes gives the scopes at the address out to the innermost inlined subroutine only, then the
  // scopes around that subroutine's abstract definition; dwarf_getscopes_die, given the innermost scope,
  // gives all the scopes around it where the code is: inlined subroutines, then the subprogram.
  Dwarf_Die* found = nullptr;
  int count = libdw.dwarf_getscopes(unit, lookup - bias, &found);
  std::unique_ptr<Dwarf_Die, FreeMemory> scopes(count > 0 ? found : nullptr);
  if (count <= 0) return {};
  Dwarf_Die innermost = scopes.get()[0];
  found = nullptr;
  count = libdw.dwarf_getscopes_die(&innermost, &found);
  scopes.reset(count > 0 ? found : nullptr);
  if (count <= 0) return {};

  std::vector<Dwarf_Die*> inlined;  // innermost first
  Dwarf_Die* function = nullptr;
  for (int i = 0; i < count && !function; ++i) {
    const int tag = libdw.dwarf_tag(&scopes.get()[i]);
    if (tag == kTagInlinedSubroutine) inlined.push_back(&scopes.get()[i]);
    if (tag == kTagSubprogram || tag == kTagEntryPoint) function = &scopes.get()[i];
  }
  if (inlined.empty()) return {};

  std::vector<Frame> frames(inlined.size() + 1, outermost);
  for (size_t i = 0; i < inlined.size(); ++i) {
    frames[i].function = libdw.function_name(inlined[i]);
    Frame& caller = frames[i + 1];
    caller.file.clear();
    caller.line = 0;
    libdw.call_site(inlined[i], caller.file, caller.line);
  }
  // The symbol table names the function where symbolize() does; DWARF is the fallback.
  if (frames.back().function.empty() && function) frames.back().function = libdw.function_name(function);
  return frames;
}

void Symbolizer::symbolize_with_dladdr_locked(uintptr_t address, uintptr_t lookup, Frame& frame) {
  Dl_info info{};
  void* map = nullptr;
  if (dladdr1(reinterpret_cast<void*>(lookup), &info, &map, RTLD_DL_LINKMAP) == 0) return;
  // The main program's link_map has an empty name, and dladdr gives argv[0] or "" for it.
  const char* map_name = map ? static_cast<link_map*>(map)->l_name : nullptr;
  const bool main_program = (map && (!map_name || !map_name[0])) || !info.dli_fname || !info.dli_fname[0];
  if (main_program) {
    frame.module = main_program_;
  } else if (char* real = realpath(info.dli_fname, nullptr)) {
    // The name the library was opened by can go through symbolic links (/lib -> /usr/lib); libdw names
    // the mapped file, and both ways should name a module alike.
    frame.module = real;
    std::free(real);
  } else {
    frame.module = info.dli_fname;
  }
  frame.module_offset = address - reinterpret_cast<uintptr_t>(info.dli_fbase);
  // glibc names the nearest dynamic symbol that contains the address; check it anyway, other libcs differ.
  if (info.dli_sname && info.dli_saddr && reinterpret_cast<uintptr_t>(info.dli_saddr) <= lookup) {
    frame.function = demangle(info.dli_sname);
  }
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT
