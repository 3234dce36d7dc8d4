// Kernel names: demangling and the short "base" name users type in a policy.
#include "names.h"

#include <cxxabi.h>

#include <cstdlib>

namespace blockrun {

std::string demangle(const char* mangled) {
  if (!mangled) return "";
  if (mangled[0] != '_' || mangled[1] != 'Z') return mangled;
  int status = 0;
  char* text = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  if (status != 0 || !text) return mangled;
  std::string out(text);
  std::free(text);
  return out;
}

std::string base_name(std::string_view name) {
  // Find the parameter list: the last top-level "(...)" group, scanning from the end.
  size_t end = name.size();
  int depth = 0;
  for (size_t i = name.size(); i-- > 0;) {
    char c = name[i];
    if (closes_nesting(c)) {
      if (depth == 0 && c == ')') end = i;  // candidate: closing paren of the parameter list
      ++depth;
    } else if (opens_nesting(c)) {
      --depth;
      if (depth == 0 && c == '(' && end != name.size()) {
        // `(anonymous namespace)` is part of a name, not a parameter list.
        if (name.substr(i, 21) != "(anonymous namespace)") {
          name = name.substr(0, i);
          break;
        }
        end = name.size();
      }
    }
  }
  // Drop a leading return type: the name starts after the last top-level space.
  depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (opens_nesting(c)) ++depth;
    if (closes_nesting(c) && depth > 0) --depth;
    if (c == ' ' && depth == 0) start = i + 1;
  }
  return std::string(name.substr(start));
}

std::string printable(std::string_view text, size_t limit) {
  std::string out;
  size_t kept = text.size() > limit ? limit : text.size();
  out.reserve(kept + 16);
  static const char kHex[] = "0123456789abcdef";
  auto escape = [&](unsigned char c) {
    out += "\\x";
    out += kHex[c >> 4];
    out += kHex[c & 15];
  };
  for (size_t i = 0; i < kept; ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) {
      escape(c);
    } else if (c == 0xc2 && i + 1 < kept && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
      // U+0080..U+009F in UTF-8: the C1 controls, which a UTF-8 terminal takes as ESC-sequences do (U+009B
      // is CSI).
      escape(c);
      escape(static_cast<unsigned char>(text[++i]));
    } else {
      out += static_cast<char>(c);
    }
  }
  if (kept < text.size()) out += "...(" + std::to_string(text.size()) + " bytes)";
  return out;
}

KernelName make_kernel_name(const char* mangled) {
  KernelName name;
  name.mangled = mangled ? mangled : "";
  name.demangled = demangle(mangled);
  name.base = base_name(name.demangled);
  return name;
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT
