// Pointing a library's exported symbol at another function (see symbol_table.h).
//
// glibc resolves a symbol of a loaded object as its load address plus the symbol's st_value, computed modulo
// 2^64, at every lookup (dlsym on a handle, the relocations of a library loaded later), and keeps no copy of
// it. So st_value = target - load address makes every later lookup of that name answer `target`, while the
// library's own calls, bound inside it, are untouched. The table lies in a read-only segment: its page is
// made writable for the write and given back the segment's own protection.
#include "symbol_table.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

namespace blockrun::shim {

namespace {

using DynamicEntry = ElfW(Dyn);

// The dynamic section's addresses: relocated in place by glibc, except where a value is still an offset
// from the object's load address `base`.
uintptr_t dynamic_address(ElfW(Addr) base, ElfW(Addr) value) {
  return value < base ? base + value : value;
}

uintptr_t dynamic_address(const link_map* map, ElfW(Addr) value) {
  return dynamic_address(map->l_addr, value);
}

// How many entries the dynamic symbol table has: from DT_HASH's chain count, else from DT_GNU_HASH (the
// highest symbol any bucket starts, then its chain to the end).
size_t symbol_count(const DynamicEntry* dynamic, ElfW(Addr) base) {
  const uint32_t* sysv_hash = nullptr;
  const uint32_t* gnu_hash = nullptr;
  for (const ElfW(Dyn)* entry = dynamic; entry->d_tag != DT_NULL; ++entry) {
    if (entry->d_tag == DT_HASH)
      sysv_hash = reinterpret_cast<const uint32_t*>(dynamic_address(base, entry->d_un.d_ptr));
    if (entry->d_tag == DT_GNU_HASH)
      gnu_hash = reinterpret_cast<const uint32_t*>(dynamic_address(base, entry->d_un.d_ptr));
  }
  if (sysv_hash) return sysv_hash[1];
  if (!gnu_hash) return 0;
  uint32_t buckets = gnu_hash[0], first = gnu_hash[1], bloom_words = gnu_hash[2];
  const uint32_t* bucket = gnu_hash + 4 + bloom_words * (sizeof(ElfW(Addr)) / 4);
  const uint32_t* chain = bucket + buckets;
  uint32_t last = 0;
  for (uint32_t i = 0; i < buckets; ++i) last = bucket[i] > last ? bucket[i] : last;
  if (last < first) return first;
  while ((chain[last - first] & 1) == 0) ++last;
  return last + 1;
}

// The protection of the loaded segment that holds `address`, from the object's program headers.
int segment_protection(const link_map* map, uintptr_t address) {
  struct Query {
    ElfW(Addr) base;
    uintptr_t address;
    int protection;
  } query{map->l_addr, address, PROT_READ};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto* query = static_cast<Query*>(data);
        if (info->dlpi_addr != query->base) return 0;
        for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& header = info->dlpi_phdr[i];
          uintptr_t begin = info->dlpi_addr + header.p_vaddr;
          if (header.p_type != PT_LOAD || query->address < begin || query->address >= begin + header.p_memsz)
            continue;
          query->protection = ((header.p_flags & PF_R) ? PROT_READ : 0) |
                              ((header.p_flags & PF_W) ? PROT_WRITE : 0) |
                              ((header.p_flags & PF_X) ? PROT_EXEC : 0);
          return 1;
        }
        return 1;
      },
      &query);
  return query.protection;
}

}  // namespace

bool point_symbol_at(void* handle, const char* name, void* target) {
  link_map* map = nullptr;
  if (!handle || dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || !map) return false;
  ElfW(Sym)* symbols = nullptr;
  const char* strings = nullptr;
  for (const ElfW(Dyn)* entry = map->l_ld; entry->d_tag != DT_NULL; ++entry) {
    if (entry->d_tag == DT_SYMTAB)
      symbols = reinterpret_cast<ElfW(Sym)*>(dynamic_address(map, entry->d_un.d_ptr));
    if (entry->d_tag == DT_STRTAB)
      strings = reinterpret_cast<const char*>(dynamic_address(map, entry->d_un.d_ptr));
  }
  if (!symbols || !strings) return false;
  size_t count = symbol_count(map->l_ld, map->l_addr);
  bool pointed = false;
  for (size_t index = 1; index < count; ++index) {
    ElfW(Sym)& symbol = symbols[index];
    if (symbol.st_shndx == SHN_UNDEF || ELF64_ST_TYPE(symbol.st_info) != STT_FUNC ||
        std::strcmp(strings + symbol.st_name, name) != 0)
      continue;
    // Every version of the name (cuMemAlloc@... twice): each entry is the name as some caller asks for it.
    uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    uintptr_t address = reinterpret_cast<uintptr_t>(&symbol.st_value);
    auto* start = reinterpret_cast<void*>(address & ~(page - 1));
    size_t length =
        (address + sizeof(symbol.st_value) > reinterpret_cast<uintptr_t>(start) + page) ? 2 * page : page;
    int protection = segment_protection(map, address);
    if (!(protection & PROT_WRITE) && mprotect(start, length, protection | PROT_WRITE) != 0) return pointed;
    symbol.st_value = static_cast<ElfW(Addr)>(reinterpret_cast<uintptr_t>(target) - map->l_addr);
    if (!(protection & PROT_WRITE)) mprotect(start, length, protection);
    pointed = true;
  }
  return pointed;
}

bool defines_function(const dl_phdr_info& object, const char* name) {
  const ElfW(Dyn)* dynamic = nullptr;
  for (ElfW(Half) i = 0; i < object.dlpi_phnum; ++i) {
    if (object.dlpi_phdr[i].p_type == PT_DYNAMIC)
      dynamic = reinterpret_cast<const ElfW(Dyn)*>(object.dlpi_addr + object.dlpi_phdr[i].p_vaddr);
  }
  if (!dynamic) return false;
  const ElfW(Sym)* symbols = nullptr;
  const char* strings = nullptr;
  for (const ElfW(Dyn)* entry = dynamic; entry->d_tag != DT_NULL; ++entry) {
    if (entry->d_tag == DT_SYMTAB)
      symbols = reinterpret_cast<const ElfW(Sym)*>(dynamic_address(object.dlpi_addr, entry->d_un.d_ptr));
    if (entry->d_tag == DT_STRTAB)
      strings = reinterpret_cast<const char*>(dynamic_address(object.dlpi_addr, entry->d_un.d_ptr));
  }
  if (!symbols || !strings) return false;
  size_t count = symbol_count(dynamic, object.dlpi_addr);
  for (size_t index = 1; index < count; ++index) {
    const ElfW(Sym)& symbol = symbols[index];
    if (symbol.st_shndx != SHN_UNDEF && ELF64_ST_TYPE(symbol.st_info) == STT_FUNC &&
        std::strcmp(strings + symbol.st_name, name) == 0)
      return true;
  }
  return false;
}

}  // namespace blockrun::shim
// SPDX-License-Identifier: MIT
